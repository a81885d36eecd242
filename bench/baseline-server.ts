// The hand-written baseline of `npm run bench`: node:http + pg, no framework, no ORM. It runs the
// same SQL statements as the service for each benchmarked request and answers the same JSON bytes
// (bench/run.ts compares the bodies before timing), every statement a named prepared statement.
// Started as a child process by bench/run.ts.
import http from 'node:http';
import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import { BENCH_URLS } from './settings.js';

const pool = new pg.Pool({ connectionString: process.env.BENCH_DATABASE_URL, max: 10 });
/** BENCH_BASELINE_TRAIL=off: the bulk update appends no audit records (a baseline that keeps no trail, against which the trail's whole cost shows). */
const keepsTrail = process.env.BENCH_BASELINE_TRAIL !== 'off';
let statements = 0;
type Client = pg.Pool | pg.PoolClient;
/**
 * Every statement as a named prepared statement, named after its text: each connection parses and
 * plans it once, then sends only Bind/Execute with the values, as a careful hand-written server does.
 */
const statementName = (sql: string) => `b${createHash('sha256').update(sql).digest('hex').slice(0, 16)}`;
const names = new Map<string, string>();
const query = <T extends pg.QueryResultRow>(client: Client, sql: string, params: unknown[] = []) => {
  statements++;
  let name = names.get(sql);
  if (name === undefined) names.set(sql, (name = statementName(sql)));
  return client.query<T>({ name, text: sql, values: params });
};

interface Principal {
  accountId: string;
  credentialId: string;
  /** The credential's last four characters, which audit records name. */
  tail: string;
}

async function authenticate(header: string | undefined): Promise<Principal | undefined> {
  const match = /^Token token=(.+)$/.exec(header ?? '');
  if (!match) return undefined;
  const digest = createHash('sha256').update(match[1]!, 'utf8').digest('hex');
  const { rows } = await query<{ id: string; account_id: string }>(pool,
    `select k.id, k.account_id, k.user_id, k.read_only, u.role
       from api_keys k
       left join users u on u.id = k.user_id and u.deleted_at is null and u.suspended_at is null
      where k.token_digest = $1 and k.revoked_at is null`,
    [digest],
  );
  return rows[0] ? { accountId: rows[0].account_id, credentialId: rows[0].id, tail: match[1]!.slice(-4) } : undefined;
}

const USER_COLUMNS = 'id, name, email, time_zone, color, role, avatar_url, description, invitation_sent, job_title, created_via_sso';
interface UserRecord {
  id: string; name: string; email: string; time_zone: string; color: string; role: string; avatar_url: string | null;
  description: string | null; invitation_sent: boolean; job_title: string | null; created_via_sso: boolean;
}

function present(user: UserRecord) {
  return {
    id: user.id,
    type: 'user',
    summary: user.name,
    self: `${BENCH_URLS.api}/users/${user.id}`,
    html_url: `${BENCH_URLS.web}/users/${user.id}`,
    name: user.name,
    email: user.email,
    time_zone: user.time_zone,
    color: user.color,
    role: user.role,
    avatar_url: user.avatar_url ?? `${BENCH_URLS.web}/assets/blank-avatar.png`,
    description: user.description,
    invitation_sent: user.invitation_sent,
    ...(user.job_title !== null ? { job_title: user.job_title } : {}),
    created_via_sso: user.created_via_sso,
    teams: [],
    contact_methods: [],
    notification_rules: [],
  };
}

function send(res: http.ServerResponse, status: number, body: string, contentType = 'application/json; charset=utf-8') {
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** `Authorization: Bearer <provisioning token>` as the service resolves it: the `aagpt_` (or older `scim_`) prefix routes it to its one look-up. */
async function authenticateBearer(header: string | undefined): Promise<Principal | undefined> {
  const match = /^Bearer ((?:aagpt|scim)_.+)$/.exec(header ?? '');
  if (!match) return undefined;
  const digest = createHash('sha256').update(match[1]!, 'utf8').digest('hex');
  const { rows } = await query<{ id: string; account_id: string }>(pool, 'select id, account_id from provisioning_tokens where token_digest = $1 and revoked_at is null', [digest]);
  return rows[0] ? { accountId: rows[0].account_id, credentialId: rows[0].id, tail: match[1]!.slice(-4) } : undefined;
}

interface ScimRecord { id: string; name: string; email: string; time_zone: string; role: string; job_title: string | null; external_id: string | null; active: boolean; version: string; created_at: Date; updated_at: Date }

function presentScim(user: ScimRecord) {
  const words = user.name.trim().split(/\s+/);
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    id: user.id,
    ...(user.external_id !== null ? { externalId: user.external_id } : {}),
    userName: user.email,
    displayName: user.name,
    name: words.length < 2 ? { formatted: user.name } : { formatted: user.name, givenName: words.slice(0, -1).join(' '), familyName: words.at(-1)! },
    emails: [{ value: user.email, type: 'work', primary: true }],
    ...(user.job_title !== null ? { title: user.job_title } : {}),
    timezone: user.time_zone,
    roles: [{ type: 'base', value: user.role, primary: true }],
    active: user.active,
    meta: { resourceType: 'User', created: user.created_at.toISOString(), lastModified: user.updated_at.toISOString(), location: `${BENCH_URLS.api}/scim/v2/Users/${user.id}`, version: `W/"${user.version}"` },
  };
}

/** Only the benchmark's look-up: `GET /scim/v2/Users?filter=userName eq "<email>"`. */
async function handleScim(req: http.IncomingMessage, res: http.ServerResponse, url: URL) {
  const principal = await authenticateBearer(req.headers.authorization);
  if (!principal) return send(res, 401, '{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"401","detail":"Authentication failed"}', 'application/scim+json; charset=utf-8');
  const email = /^userName eq "(.*)"$/.exec(url.searchParams.get('filter') ?? '')?.[1] ?? '';
  const live = 'account_id = $1 and deleted_at is null';
  const [page, total] = [
    await query<ScimRecord>(pool,
      `with matches as materialized (select id, name, email, time_zone, role, job_title, external_id, (suspended_at is null) as active,
              (floor(extract(epoch from updated_at) * 1000000))::bigint::text as version, created_at, updated_at
         from users where ${live} and ((lower(email) = lower($2))))
       select * from matches order by name, id limit $3 offset $4`, [principal.accountId, email, 101, 0]),
    await query<{ n: string }>(pool, `select count(*) as n from users where ${live} and ((lower(email) = lower($2)))`, [principal.accountId, email]),
  ];
  const resources = page.rows.slice(0, 100).map(presentScim);
  send(res, 200, JSON.stringify({ schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'], totalResults: Number(total.rows[0]!.n), startIndex: 1, itemsPerPage: resources.length, Resources: resources }), 'application/scim+json; charset=utf-8');
}

async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
  if (req.url?.startsWith('/scim/v2/')) return handleScim(req, res, new URL(req.url, 'http://baseline'));
  const principal = await authenticate(req.headers.authorization);
  if (!principal) return send(res, 401, '{"error":{"message":"Unauthorized","code":2006,"errors":[]}}');
  const url = new URL(req.url ?? '/', 'http://baseline');
  const show = /^\/users\/(P[A-Z0-9]{6})$/.exec(url.pathname);
  if (req.method === 'GET' && show) {
    const { rows } = await query<UserRecord>(pool, `select ${USER_COLUMNS} from users where id = $1 and account_id = $2 and deleted_at is null`, [show[1], principal.accountId]);
    if (!rows[0]) return send(res, 404, '{"error":{"message":"Not Found","code":2100,"errors":[]}}');
    return send(res, 200, JSON.stringify({ user: present(rows[0]) }));
  }
  if (req.method === 'GET' && url.pathname === '/users') {
    const limit = Number(url.searchParams.get('limit') ?? 25);
    const { rows } = await query<UserRecord>(pool,
      `select ${USER_COLUMNS} from users where account_id = $1 and deleted_at is null order by name, id limit $2 offset 0`,
      [principal.accountId, limit + 1],
    );
    return send(res, 200, JSON.stringify({ users: rows.slice(0, limit).map(present), limit, offset: 0, more: rows.length > limit, total: null }));
  }
  if (req.method === 'POST' && url.pathname === '/graphql') {
    // Only the benchmark's nested document: { users(first: 25) { totalCount nodes { id name email role notificationSubscriptions(first: 5) { totalCount } } } }
    await readBody(req);
    const [page, total] = await Promise.all([
      query<{ id: string; name: string; email: string; role: string }>(pool,
        'select id, name, email, role from users where account_id = $1 and deleted_at is null order by name, id limit 26 offset 0', [principal.accountId]),
      query<{ n: string }>(pool, 'select count(*) as n from users where account_id = $1 and deleted_at is null', [principal.accountId]),
    ]);
    const nodes = page.rows.slice(0, 25);
    const counts = await query<{ user_id: string; n: string }>(pool,
      'select user_id, count(*) as n from notification_subscriptions where account_id = $1 and user_id = any($2) group by user_id',
      [principal.accountId, nodes.map((node) => node.id)],
    );
    const byUser = new Map(counts.rows.map((row) => [row.user_id, Number(row.n)]));
    const data = {
      users: {
        totalCount: Number(total.rows[0]!.n),
        nodes: nodes.map((node) => ({ id: node.id, name: node.name, email: node.email, role: node.role.toUpperCase(), notificationSubscriptions: { totalCount: byUser.get(node.id) ?? 0 } })),
      },
    };
    return send(res, 200, `${JSON.stringify({ data })}\n`);
  }
  if (req.method === 'PUT' && url.pathname === '/users') {
    const { users } = JSON.parse(await readBody(req)) as { users: { id: string; job_title: string }[] };
    const client = await pool.connect();
    try {
      await query(client, 'begin');
      // Locked in id order and read with what the audit records need (the service does the same).
      const found = await query<{ id: string; name: string; job_title: string | null }>(client,
        'select id, name, job_title from users where id = any($1) and account_id = $2 and deleted_at is null order by id for no key update',
        [users.map((u) => u.id), principal.accountId],
      );
      if (found.rowCount !== users.length) {
        await query(client, 'rollback');
        return send(res, 400, '{"error":{"message":"Invalid Input Provided","code":2001,"errors":[]}}');
      }
      const updated = await query<UserRecord>(client,
        `update users set job_title = t.job_title, updated_at = now() from unnest($1::text[], $2::text[]) as t(id, job_title)
          where users.id = t.id returning ${USER_COLUMNS.split(', ').map((column) => `users.${column}`).join(', ')}`,
        [users.map((u) => u.id), users.map((u) => u.job_title)],
      );
      if (keepsTrail) await recordTrail(client, principal, found.rows, users, { requestId: randomUUID(), remoteAddress: req.socket.remoteAddress ?? null, description: 'PUT /users' });
      await query(client, 'commit');
      const byId = new Map(updated.rows.map((row) => [row.id, row]));
      return send(res, 200, JSON.stringify({ users: users.map((u) => present(byId.get(u.id)!)) }));
    } catch (error) {
      await query(client, 'rollback');
      throw error;
    } finally {
      client.release();
    }
  }
  if (req.method === 'DELETE' && url.pathname === '/oauth_delegations') {
    const userId = url.searchParams.get('user_id');
    const types = (url.searchParams.get('type') ?? '').split(',');
    await query(pool,
      `update oauth_delegations set status = 'revoked', revoked_at = now(), revoked_by_kind = 'account_key', revoked_by_credential_id = $1, revocation_reason = 'sign_out'
        where account_id = $2 and user_id = $3 and status = 'issued' and delegation_type = any($4)`,
      [principal.credentialId, principal.accountId, userId, types],
    );
    return send(res, 200, '{"status":"ok"}');
  }
  send(res, 404, '{"error":{"message":"Not Found","code":2100,"errors":[]}}');
}

/**
 * The work the service's write path adds to every write, done by hand: one audit record per changed
 * user appended to the account's keyed hash chain, as one batch, by the schema's `audit_append_batch`
 * (the same call the service makes), and the change announced to live-update listeners with
 * `pg_notify` (payloads below PostgreSQL's 8000-byte limit), both in one statement.
 */
const CHAIN_KEY_PADS = (() => {
  const block = Buffer.alloc(64);
  createHash('sha256').update('baseline audit chain key').digest().copy(block);
  return { inner: Buffer.from(block.map((byte) => byte ^ 0x36)).toString('hex'), outer: Buffer.from(block.map((byte) => byte ^ 0x5c)).toString('hex') };
})();

async function recordTrail(
  client: pg.PoolClient,
  principal: Principal,
  before: { id: string; name: string; job_title: string | null }[],
  users: { id: string; job_title: string }[],
  origin: { requestId: string; remoteAddress: string | null; description: string },
) {
  const previous = new Map(before.map((row) => [row.id, row]));
  const changed = users.filter((user) => previous.get(user.id)!.job_title !== user.job_title);
  if (changed.length === 0) return;
  const actor = { id: principal.credentialId, type: 'api_key_reference' };
  // As the service sends it (src/audit/audit-trail.hook.ts): the batch's shared context once, each record's own part as one element of a
  // JSON array with their byte offsets, the actions and roots, the chain key's HMAC pads.
  const elements = changed.map((user) => {
    const resource = { id: user.id, type: 'user_reference', summary: previous.get(user.id)!.name };
    return JSON.stringify([randomUUID(), 'update', 'user', user.id, {
      rootResource: resource,
      details: { resource, fields: [{ name: 'job_title', value: user.job_title, beforeValue: previous.get(user.id)!.job_title }], references: [] },
    }]);
  });
  const offsets: number[] = [];
  let offset = 1;
  for (const element of elements) {
    offsets.push(offset);
    offset += Buffer.byteLength(element) + 1;
  }
  offsets.push(offset);
  const context = JSON.stringify({
    executionContext: { requestId: origin.requestId, remoteAddress: origin.remoteAddress },
    actors: [actor],
    method: { type: 'api_token', truncatedToken: principal.tail, description: origin.description },
  });
  const payloads: string[] = [];
  let batch: string[] = [];
  for (const user of changed) {
    const encoded = JSON.stringify({ a: principal.accountId, k: 'update', t: 'user', i: user.id, u: user.id, f: ['job_title'] });
    if (batch.length && batch.join(',').length + encoded.length + 3 > 7_500) payloads.push(`[${batch.join(',')}]`), (batch = []);
    batch.push(encoded);
  }
  payloads.push(`[${batch.join(',')}]`);
  // One statement, as the service's write path makes its commit hooks' calls; the append last: the chain head it locks is held to the commit.
  const notifies = payloads.map((_, index) => `pg_notify($${2 * index + 1}, $${2 * index + 2})`);
  const first = 2 * payloads.length + 1;
  const append = `audit_append_batch(${Array.from({ length: 9 }, (_, index) => `$${first + index}`).join(', ')})`;
  await query(client, `select ${[...notifies, append].join(', ')}`, [
    ...payloads.flatMap((payload) => ['live_changes', payload]),
    principal.accountId, context, Buffer.from(`[${elements.join(',')}]`), offsets, ['update'], changed.map(() => 'user'), changed.map((user) => user.id), CHAIN_KEY_PADS.inner, CHAIN_KEY_PADS.outer,
  ]);
}

const server = http.createServer((req, res) => {
  handle(req, res).catch((error: unknown) => {
    process.stderr.write(`baseline: ${String(error)}\n`);
    if (!res.headersSent) send(res, 500, '{"error":{"message":"Internal Server Error","code":2000,"errors":[]}}');
  });
});
server.keepAliveTimeout = 5000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.send?.({ port: typeof address === 'object' && address ? address.port : 0 });
});
process.on('message', (message: { kind: string }) => {
  if (message.kind === 'stats') process.send?.({ statements, rss: process.memoryUsage().rss });
  if (message.kind === 'reset') statements = 0;
  if (message.kind === 'stop') server.close(() => pool.end().then(() => process.exit(0)));
});
