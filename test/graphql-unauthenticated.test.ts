import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import supertest from 'supertest';
import { startHarness, type Harness } from './support/harness.js';

/**
 * On /graphql as on REST, a missing, unknown, revoked or expired credential is HTTP 401 with
 * `WWW-Authenticate` and an UNAUTHENTICATED error before the document is read, whatever it asks:
 * a client's refresh logic keyed on 401 fires.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h.close());

const post = (query: string, authorization?: string) => {
  const request = supertest(h.app).post('/graphql').set('Content-Type', 'application/json');
  return (authorization ? request.set('Authorization', authorization) : request).send({ query });
};

describe('POST /graphql with a credential that does not work', () => {
  test('unknown, malformed, missing, revoked: 401 with WWW-Authenticate and UNAUTHENTICATED, even for { __typename }', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const revokedSecret = (user.key as { token: string }).token;
    const [key] = await h.database.em().execute<{ id: string }[]>('select id from api_keys where user_id = ?', [user.id]);
    expect((await h.graphql('mutation($id: ID!) { revokeApiKey(input: {id: $id}) { apiKey { id } } }', { id: key!.id }, user.key)).errors).toBeUndefined();
    const cases: Array<[string, string | undefined, RegExp]> = [
      ['unknown token', 'Bearer not-a-token', /error="invalid_token"/],
      ['unknown key', 'Token token=nope', /error="invalid_token"/],
      ['malformed header', 'Basic abc', /error="invalid_token"/],
      ['revoked key', `Token token=${revokedSecret}`, /error="invalid_token"/],
      ['no credential', undefined, /^Bearer realm="api"$/],
    ];
    for (const [name, authorization, challenge] of cases) {
      for (const query of ['{ __typename }', '{ viewer { id } }']) {
        const answer = await post(query, authorization);
        expect([name, query, answer.status, answer.headers['www-authenticate']]).toEqual([name, query, 401, expect.stringMatching(challenge)]);
        expect(answer.body.data).toBeUndefined();
        expect(answer.body.errors[0].extensions).toMatchObject({ code: 'UNAUTHENTICATED', apiErrorCode: 2006 });
      }
    }
    const getAnswer = await supertest(h.app).get('/graphql').query({ query: '{ __typename }' }).set('Accept', 'application/json');
    expect(getAnswer.status).toBe(401);
  });

  test('a working credential is served as before, and a browser\'s plain GET of the page is not refused', async () => {
    const account = await h.createAccount();
    const ok = await post('{ __typename }', `Token token=${(account.key as { token: string }).token}`);
    expect([ok.status, ok.body]).toEqual([200, { data: { __typename: 'Query' } }]);
    const page = await supertest(h.app).get('/graphql').set('Accept', 'text/html');
    expect(page.status).not.toBe(401);
  });
});

describe('a browser\'s GET /graphql with the explorer off (production\'s default)', () => {
  test('gets a short page saying where the API is, not a refusal meant for scripts; a script\'s GET is answered as before', async () => {
    const page = await supertest(h.app).get('/graphql').set('Accept', 'text/html,application/xhtml+xml,*/*;q=0.8');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.text).toContain('POST /graphql');
    expect(page.text).not.toMatch(/Cross-Site Request Forgery|\(cut\)/);
    const script = await supertest(h.app).get('/graphql').set('Accept', 'application/json');
    expect(script.headers['content-type']).not.toContain('text/html');
  });
});
