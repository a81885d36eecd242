import { startHarness, type Harness, type TestAccount } from '../../test/support/harness.js';
import { scim } from '../../test/support/scim.js';
import { createHash } from 'node:crypto';
import { createProvisioningTokenCommand, listProvisioningTokensCommand, revokeProvisioningTokenCommand } from '../cli/commands/provisioning-tokens.commands.js';
import { userListStatements } from '../users/search/user-list-statements.js';
import { ProvisioningTokensService } from './provisioning-tokens.service.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

async function provisioningToken(account: TestAccount): Promise<string> {
  return (await h.database.transactions.run(h.database.em(), (tx) => new ProvisioningTokensService(tx).create(account.id))).token;
}

const CORE = 'urn:ietf:params:scim:schemas:core:2.0:User';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

describe('Okta: the request sequence of its SCIM 2.0 provisioning', () => {
  test('look-up by userName, create, read, PUT, deactivate by PATCH, read back, reactivate', async () => {
    const account = await h.createAccount();
    const token = await provisioningToken(account);
    const email = `okta.user-${account.id}@example.com`;

    // Okta first checks whether the user exists.
    const lookup = await scim(h.app, 'get', `/Users?filter=${encodeURIComponent(`userName eq "${email}"`)}&startIndex=1&count=100`, { token });
    expect(lookup.status).toBe(200);
    expect(lookup.body).toMatchObject({ totalResults: 0, startIndex: 1, itemsPerPage: 0, Resources: [] });

    const created = await scim(h.app, 'post', '/Users', {
      token,
      body: {
        schemas: [CORE],
        userName: email,
        name: { givenName: 'Okta', familyName: 'User' },
        emails: [{ primary: true, value: email, type: 'work' }],
        displayName: 'Okta User',
        locale: 'en-US',
        externalId: '00ujl29u0le5T6Aj10h7',
        groups: [],
        password: 'ignored-Secret-1',
        active: true,
      },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    expect(id).toMatch(/^P[A-Z0-9]{6}$/);
    expect(created.body).toMatchObject({ userName: email, displayName: 'Okta User', externalId: '00ujl29u0le5T6Aj10h7', active: true, roles: [{ type: 'base', value: 'user', primary: true }] });
    expect(created.headers.etag).toBe(created.body.meta.version);
    expect(created.body.meta).toMatchObject({ resourceType: 'User', location: `https://api.test.example/scim/v2/Users/${id}` });

    // The same user on the REST face, with the same id and no `active` field.
    const rest = await h.rest('get', `/users/${id}`, { key: account.key });
    expect(rest.body.user).toMatchObject({ id, email, name: 'Okta User' });
    expect(rest.body.user).not.toHaveProperty('active');

    const found = await scim(h.app, 'get', `/Users?filter=${encodeURIComponent(`userName eq "${email.toUpperCase()}"`)}`, { token });
    expect(found.body.totalResults).toBe(1);
    expect(found.body.Resources[0].id).toBe(id);

    const read = await scim(h.app, 'get', `/Users/${id}`, { token });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created.body);

    const replaced = await scim(h.app, 'put', `/Users/${id}`, {
      token,
      body: { schemas: [CORE], id, userName: email, name: { givenName: 'Okta', familyName: 'Renamed' }, emails: [{ primary: true, value: email, type: 'work' }], title: 'Engineer', active: true },
    });
    expect(replaced.status).toBe(200);
    // displayName absent: the name parts make the name; externalId absent from a PUT is cleared.
    expect(replaced.body).toMatchObject({ displayName: 'Okta Renamed', title: 'Engineer', active: true });
    expect(replaced.body).not.toHaveProperty('externalId');

    const deactivated = await scim(h.app, 'patch', `/Users/${id}`, { token, body: { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: false } }] } });
    expect(deactivated.status).toBe(200);
    expect(deactivated.body.active).toBe(false);
    expect((await scim(h.app, 'get', `/Users/${id}`, { token })).body.active).toBe(false);
    const graphql = await h.graphql<{ user: { active: boolean } }>('query($id: ID!) { user(id: $id) { active } }', { id }, account.key);
    expect(graphql.data?.user.active).toBe(false);
    // Still listed on REST.
    const listed = await h.rest('get', `/users?query=${encodeURIComponent(email)}`, { key: account.key });
    expect(listed.body.users.map((user: { id: string }) => user.id)).toEqual([id]);

    const reactivated = await scim(h.app, 'patch', `/Users/${id}`, { token, body: { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: true } }] } });
    expect(reactivated.status).toBe(200);
    expect(reactivated.body.active).toBe(true);
  });
});

describe('Entra ID: the request shapes of its provisioning service', () => {
  test('externalId look-up, create with the enterprise extension, "Replace" with string booleans and filtered email paths, soft delete, DELETE', async () => {
    const account = await h.createAccount();
    const token = await provisioningToken(account);
    const externalId = `entra-${account.id}`;
    const email = `entra.user-${account.id}@example.com`;

    const none = await scim(h.app, 'get', `/Users?filter=${encodeURIComponent(`externalId eq "${externalId}"`)}`, { token });
    expect(none.body).toMatchObject({ totalResults: 0, Resources: [] });

    const created = await scim(h.app, 'post', '/Users', {
      token,
      contentType: 'application/json',
      body: {
        schemas: [CORE, ENTERPRISE],
        externalId,
        userName: email,
        active: 'True',
        displayName: 'Entra User',
        emails: [{ primary: true, type: 'work', value: email }],
        meta: { resourceType: 'User' },
        name: { formatted: 'Entra User', familyName: 'User', givenName: 'Entra' },
        roles: [],
        [ENTERPRISE]: { department: 'Engineering', manager: { value: 'someone' } },
      },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    expect(created.body).toMatchObject({ externalId, userName: email, displayName: 'Entra User', active: true });
    expect(created.body).not.toHaveProperty(ENTERPRISE);

    const byExternalId = await scim(h.app, 'get', `/Users?filter=${encodeURIComponent(`externalId eq "${externalId}"`)}`, { token });
    expect(byExternalId.body.Resources.map((user: { id: string }) => user.id)).toEqual([id]);
    const byWorkEmail = await scim(h.app, 'get', `/Users?filter=${encodeURIComponent(`emails[type eq "work"].value eq "${email}"`)}`, { token });
    expect(byWorkEmail.body.Resources.map((user: { id: string }) => user.id)).toEqual([id]);
    const both = await scim(h.app, 'get', `/Users?filter=${encodeURIComponent(`externalId eq "${externalId}" and userName eq "${email}"`)}`, { token });
    expect(both.body.totalResults).toBe(1);

    const newEmail = `renamed-${account.id}@example.com`;
    const patched = await scim(h.app, 'patch', `/Users/${id}`, {
      token,
      body: {
        schemas: [PATCH_OP],
        Operations: [
          { op: 'Replace', path: 'emails[type eq "work"].value', value: newEmail },
          { op: 'Replace', path: 'title', value: 'Staff Engineer' },
          { op: 'Add', path: `${ENTERPRISE}:department`, value: 'Research' },
          { op: 'Replace', path: 'name.givenName', value: 'Entra' },
        ],
      },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ userName: newEmail, emails: [{ value: newEmail, type: 'work', primary: true }], title: 'Staff Engineer', displayName: 'Entra User' });

    // Entra's soft delete: active as the string "False".
    const softDeleted = await scim(h.app, 'patch', `/Users/${id}`, { token, body: { schemas: [PATCH_OP], Operations: [{ op: 'Replace', path: 'active', value: 'False' }] } });
    expect(softDeleted.status).toBe(200);
    expect(softDeleted.body.active).toBe(false);
    const stillListed = await scim(h.app, 'get', `/Users?filter=${encodeURIComponent(`externalId eq "${externalId}"`)}`, { token });
    expect(stillListed.body.Resources[0]).toMatchObject({ id, active: false });

    const deleted = await scim(h.app, 'delete', `/Users/${id}`, { token });
    expect(deleted.status).toBe(204);
    expect((await scim(h.app, 'get', `/Users/${id}`, { token })).status).toBe(404);
    expect((await h.rest('get', `/users/${id}`, { key: account.key })).status).toBe(404);
  });
});

describe('discovery', () => {
  test('ServiceProviderConfig, Schemas and ResourceTypes follow the reference', async () => {
    const account = await h.createAccount();
    const token = await provisioningToken(account);
    const config = await scim(h.app, 'get', '/ServiceProviderConfig', { token });
    expect(config.body).toMatchObject({ patch: { supported: true }, filter: { supported: true, maxResults: 100 }, etag: { supported: true }, bulk: { supported: false } });
    const schemas = await scim(h.app, 'get', '/Schemas', { token });
    expect(schemas.body.Resources.map((schema: { id: string }) => schema.id)).toEqual([CORE]);
    expect((await scim(h.app, 'get', `/Schemas/${encodeURIComponent(CORE)}`, { token })).body.id).toBe(CORE);
    expect((await scim(h.app, 'get', '/Schemas/urn:nothing', { token })).status).toBe(404);
    expect((await scim(h.app, 'get', '/ResourceTypes', { token })).body.Resources[0]).toMatchObject({ name: 'User', endpoint: '/Users' });
  });

  test('the SCIM face\'s OpenAPI document is served without credentials', async () => {
    const response = await supertestGet('/scim/v2/openapi.json');
    expect(response.status).toBe(200);
    expect(Object.keys(response.body.paths)).toEqual(expect.arrayContaining(['/scim/v2/Users', '/scim/v2/Users/{id}', '/scim/v2/ServiceProviderConfig']));
    expect(response.body.paths['/scim/v2/Users/{id}'].patch.operationId).toBe('patchScimUser');
  });
});

async function supertestGet(path: string) {
  const { default: supertest } = await import('supertest');
  return supertest(h.app).get(path);
}

describe('bad input on the SCIM face: the SCIM error shape, the right status and scimType, nothing changed', () => {
  let account: TestAccount;
  let token: string;
  let id: string;
  let version: string;
  const email = () => `bad-input-${account.id}@example.com`;

  beforeAll(async () => {
    account = await h.createAccount();
    token = await provisioningToken(account);
    const created = await scim(h.app, 'post', '/Users', { token, body: { schemas: [CORE], userName: email(), displayName: 'Bad Input', externalId: 'ext-bad-input' } });
    id = created.body.id;
    version = created.body.meta.version;
  });

  async function unchanged(): Promise<void> {
    const read = await scim(h.app, 'get', `/Users/${id}`, { token });
    expect(read.body).toMatchObject({ userName: email(), displayName: 'Bad Input', externalId: 'ext-bad-input', active: true });
    expect(read.body.meta.version).toBe(version);
  }

  const patch = (operations: unknown[]) => ({ schemas: [PATCH_OP], Operations: operations });

  test.each([
    ['malformed JSON', 'patch', () => ({ raw: '{"Operations": [' }), 400, 'invalidSyntax'],
    ['a body that is not JSON', 'put', () => ({ raw: 'userName=x', contentType: 'text/plain' }), 400, 'invalidSyntax'],
    ['an unknown op', 'patch', () => ({ body: patch([{ op: 'frobnicate', path: 'title', value: 'x' }]) }), 400, 'invalidSyntax'],
    ['an unknown path', 'patch', () => ({ body: patch([{ op: 'replace', path: 'shoeSize', value: 42 }]) }), 400, 'invalidPath'],
    ['a malformed path', 'patch', () => ({ body: patch([{ op: 'replace', path: 'emails[type eq', value: 'x' }]) }), 400, 'invalidPath'],
    ['a read-only path', 'patch', () => ({ body: patch([{ op: 'replace', path: 'id', value: 'PZZZZZZ' }]) }), 400, 'mutability'],
    ['remove without a path', 'patch', () => ({ body: patch([{ op: 'remove' }]) }), 400, 'noTarget'],
    ['a required attribute removed', 'patch', () => ({ body: patch([{ op: 'remove', path: 'userName' }]) }), 400, 'invalidValue'],
    ['a bad boolean', 'patch', () => ({ body: patch([{ op: 'replace', path: 'active', value: 'maybe' }]) }), 400, 'invalidValue'],
    ['too many operations', 'patch', () => ({ body: patch(Array.from({ length: 101 }, () => ({ op: 'replace', path: 'title', value: 'x' }))) }), 400, 'tooMany'],
    ['a valid op then an invalid one (all or none)', 'patch', () => ({ body: patch([{ op: 'replace', path: 'title', value: 'Changed' }, { op: 'replace', path: 'timezone', value: 'Not/AZone' }]) }), 400, 'invalidValue'],
    ['an oversized displayName', 'patch', () => ({ body: patch([{ op: 'replace', path: 'displayName', value: 'x'.repeat(101) }]) }), 400, 'invalidValue'],
    ['an oversized externalId', 'put', () => ({ body: { schemas: [CORE], userName: email(), displayName: 'Bad Input', externalId: 'x'.repeat(101) } }), 400, 'invalidValue'],
    ['a body over 1 MB', 'put', () => ({ body: { schemas: [CORE], userName: email(), displayName: 'x'.repeat(1_100_000) } }), 400, 'invalidValue'],
    ['a NUL character', 'put', () => ({ body: { schemas: [CORE], userName: email(), displayName: 'Bad\u0000Input', externalId: 'ext-bad-input' } }), 400, 'invalidValue'],
    ['an owner role', 'put', () => ({ body: { schemas: [CORE], userName: email(), displayName: 'Bad Input', externalId: 'ext-bad-input', roles: [{ type: 'base', value: 'owner', primary: true }] } }), 400, 'invalidValue'],
    ['a stale If-Match', 'patch', () => ({ body: patch([{ op: 'replace', path: 'title', value: 'Stale' }]), headers: { 'If-Match': 'W/"1"' } }), 412, undefined],
    ['a stale If-Match on PUT', 'put', () => ({ body: { schemas: [CORE], userName: email(), displayName: 'Renamed', externalId: 'ext-bad-input' }, headers: { 'If-Match': 'W/"1"' } }), 412, undefined],
  ] as const)('%s', async (_name, method, call, status, scimType) => {
    const response = await scim(h.app, method, `/Users/${id}`, { token, ...call() });
    expect(response.status).toBe(status);
    expect(response.body.schemas).toEqual(['urn:ietf:params:scim:api:messages:2.0:Error']);
    expect(response.body.scimType).toBe(scimType);
    await unchanged();
  });

  test('filters outside the grammar are invalidFilter', async () => {
    for (const filter of ['userName sw "bad"', 'not (userName eq "x")', 'name.givenName eq "Bad"', 'userName eq', 'userName pr', 'groups[value eq "x"]', `userName eq "${'x'.repeat(1_001)}"`, Array.from({ length: 21 }, (_, index) => `id eq "P00000${index}"`).join(' or ')]) {
      const response = await scim(h.app, 'get', `/Users?filter=${encodeURIComponent(filter)}`, { token });
      expect({ filter, status: response.status, scimType: response.body.scimType }).toEqual({ filter, status: 400, scimType: 'invalidFilter' });
    }
    const paging = await scim(h.app, 'get', '/Users?startIndex=x', { token });
    expect(paging).toMatchObject({ status: 400, body: { scimType: 'invalidValue' } });
  });

  test('duplicates are 409 uniqueness; another account\'s ids are 404; every credential kind gets the SCIM shape', async () => {
    const other = await h.createAccount();
    const otherToken = await provisioningToken(other);
    const duplicateEmail = await scim(h.app, 'post', '/Users', { token, body: { schemas: [CORE], userName: email().toUpperCase(), displayName: 'Dup' } });
    expect(duplicateEmail).toMatchObject({ status: 409, body: { scimType: 'uniqueness', status: '409' } });
    const duplicateExternalId = await scim(h.app, 'post', '/Users', { token, body: { schemas: [CORE], userName: `other-${account.id}@example.com`, displayName: 'Dup', externalId: 'ext-bad-input' } });
    expect(duplicateExternalId).toMatchObject({ status: 409, body: { scimType: 'uniqueness' } });
    // The same externalId in another account is fine.
    expect((await scim(h.app, 'post', '/Users', { token: otherToken, body: { schemas: [CORE], userName: `x-${other.id}@example.com`, displayName: 'Other', externalId: 'ext-bad-input' } })).status).toBe(201);

    for (const method of ['get', 'put', 'patch', 'delete'] as const) {
      const response = await scim(h.app, method, `/Users/${id}`, { token: otherToken, body: method === 'put' ? { schemas: [CORE], userName: 'a@b.co', displayName: 'x' } : method === 'patch' ? patch([{ op: 'replace', path: 'title', value: 'x' }]) : undefined });
      expect({ method, status: response.status }).toEqual({ method, status: 404 });
    }
    const member = await h.createUser(account, { role: 'user' });
    const readOnly = await h.accountKey(account, { readOnly: true });
    const cases: [string | undefined, number][] = [
      [undefined, 401],
      ['Bearer not-a-real-token-value', 401],
      ['Basic dXNlcjpwYXNz', 401],
      [`Token token=${(readOnly as { token: string }).token}`, 403],
      [`Token token=${(member.key as { token: string }).token}`, 403],
    ];
    for (const [authorization, status] of cases) {
      const response = await scim(h.app, 'patch', `/Users/${id}`, { authorization, body: patch([{ op: 'replace', value: { active: false } }]) });
      expect({ authorization, status: response.status }).toEqual({ authorization, status });
    }
    // A read-only key and a member may read.
    expect((await scim(h.app, 'get', `/Users/${id}`, { authorization: `Token token=${(readOnly as { token: string }).token}` })).status).toBe(200);
    await unchanged();
    expect((await scim(h.app, 'get', '/Nope', { token })).status).toBe(404);
  });
});

describe('accessctl provisioning-tokens and look-ups', () => {
  const io = { info: () => undefined };

  test('create prints the token once (only its digest is stored); list shows it; revoke refuses it', async () => {
    const account = await h.createAccount();
    const created = await createProvisioningTokenCommand.run(h.database, { account: account.id, description: 'Okta' }, io) as { id: string; token: string };
    expect(created.token.length).toBeGreaterThanOrEqual(32);
    const [stored] = await h.database.em().execute<{ token_digest: string }[]>('select token_digest from provisioning_tokens where id = ?', [created.id]);
    expect(stored!.token_digest).toBe(createHash('sha256').update(created.token).digest('hex'));
    const listed = await listProvisioningTokensCommand.run(h.database, { account: account.id }, io) as { provisioning_tokens: Record<string, unknown>[] };
    expect(listed.provisioning_tokens).toEqual([{ id: created.id, description: 'Okta', created_at: expect.any(String), revoked_at: null }]);
    expect(JSON.stringify(listed)).not.toContain(created.token);
    expect((await scim(h.app, 'get', '/Users', { token: created.token })).status).toBe(200);
    await revokeProvisioningTokenCommand.run(h.database, { id: created.id }, io);
    expect((await scim(h.app, 'get', '/Users', { token: created.token })).status).toBe(401);
    await expect(createProvisioningTokenCommand.run(h.database, { account: 'PNOPE00' }, io)).rejects.toMatchObject({ kind: 'not_found' });
  });

  test('an eq filter is one index look-up, whichever attribute it names', async () => {
    const account = await h.createAccount();
    // An account of some size, analyzed, so that walking its users would be the planner's costly alternative.
    await h.database.em().execute(
      `insert into users (id, account_id, name, email, time_zone, color, role, invitation_sent, created_via_sso, created_at, updated_at)
       select 'Q' || lpad(n::text, 6, '0'), ?, 'Bulk ' || n, 'bulk' || n || '@example.com', 'Etc/UTC', 'green', 'user', false, false, now(), now()
         from generate_series(1, 5000) as n`, [account.id]);
    await h.database.em().execute('analyze users');
    for (const match of [[{ email: 'a@example.com' }], [{ externalId: 'x' }], [{ id: 'PABCDEF' }], [{ email: 'a@example.com', externalId: 'x' }, { id: 'PABCDEF' }]]) {
      const { page } = userListStatements(account.id, { match, first: 100, offset: 0 }, ['id', 'name', 'email']);
      const em = h.database.em();
      const plan = (await em.execute<{ 'QUERY PLAN': string }[]>(`explain ${em.getPlatform().formatQuery(page.sql, page.params)}`)).map((row) => row['QUERY PLAN']).join('\n');
      expect(plan).toMatch(/Index Scan|Bitmap Index Scan/);
      expect(plan).toMatch(/users_pkey|users_account_email_live_uniq|users_account_external_id_live_uniq/);
      expect(plan).not.toMatch(/users_account_name_id_search_live_idx|Seq Scan/);
    }
  });
});

describe('the audit trail of what an identity provider changes', () => {
  test('each SCIM change is one record of method identity_provider, its actor the provisioning token, no token characters', async () => {
    const account = await h.createAccount();
    const token = await provisioningToken(account);
    const email = `audited-${account.id}@example.com`;
    const created = await scim(h.app, 'post', '/Users', { token, body: { schemas: [CORE], userName: email, displayName: 'Audited User', active: true } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const patched = await scim(h.app, 'patch', `/Users/${id}`, { token, body: { schemas: [PATCH_OP], Operations: [{ op: 'Replace', value: { active: 'False', title: 'Lead' } }] } });
    expect(patched.status).toBe(200);

    const listed = await h.rest('get', `/users/${id}/audit/records?limit=100`, { key: account.key });
    expect(listed.status).toBe(200);
    const records = listed.body.records as Array<{ action: string; method: { type: string; truncated_token: string | null }; actors: Array<{ type: string }>; details: { fields?: Array<{ name: string; value: string | null; before_value: string | null }> } }>;
    // Newest first: the PATCH's suspension and its field change, then the creation.
    expect(records.map((record) => record.action).sort()).toEqual(['create', 'suspend', 'update']);
    for (const record of records) {
      expect(record.method).toMatchObject({ type: 'identity_provider', truncated_token: null });
      expect(record.actors.map((actor) => actor.type)).toContain('provisioning_token_reference');
    }
    const update = records.find((record) => record.action === 'update')!;
    expect(update.details.fields).toEqual([{ name: 'job_title', value: 'Lead', before_value: null }]);
    expect(JSON.stringify(listed.body)).not.toContain(token);
  });
});
