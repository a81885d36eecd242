import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { parse, type GraphQLSchema } from 'graphql';
import { appSchema } from '../src/app/features.js';
import { COUNTED_ROWS, DEFAULT_MAX_COST, operationCost, SEARCH_FACTOR } from '../src/graphql/cost.js';
import { DEFAULT_MAX_ROOT_FIELDS } from '../src/graphql/limits.js';
import { startHarness, type Harness, type TestAccount } from './support/harness.js';

/** The benchmark's nested page (bench/seed.ts): a normal settings page. */
const NESTED_PAGE = '{ users(first: 25) { totalCount nodes { id name email role notificationSubscriptions(first: 5) { totalCount } } } }';
const aliased = (count: number, field: string) => `{ ${Array.from({ length: count }, (_, i) => `a${i}: ${field}`).join(' ')} }`;

describe('the cost of an operation weighs the rows it may touch', () => {
  let schema: GraphQLSchema;
  const cost = (query: string, variables?: Record<string, unknown>) => operationCost(schema, parse(query), undefined, variables);
  beforeAll(async () => {
    schema = await appSchema();
  });

  test('a totalCount weighs the rows it counts, not one value per element of the page', () => {
    // 1 for the field, 100 rows read, no element selected, one count.
    expect(cost('{ users(first: 100) { totalCount } }')).toBe(1 + 100 + COUNTED_ROWS);
    expect(cost('{ users(first: 100) { nodes { id } } }')).toBe(1 + 100 + 100 * 2);
    // Through a fragment and an alias alike: two counts.
    expect(cost('{ users(first: 1) { ...Counted n: totalCount } } fragment Counted on UserConnection { totalCount }')).toBe(1 + 1 + 2 * COUNTED_ROWS);
  });

  test('a search weighs the candidates it examines: its rows read and its count, by the search factor', () => {
    expect(cost('{ users(query: "e", first: 100) { totalCount } }')).toBe(1 + 100 * SEARCH_FACTOR + COUNTED_ROWS * SEARCH_FACTOR);
    // A search given through a variable counts the same; an empty text is no search.
    expect(cost('query($q: String) { users(query: $q, first: 100) { totalCount } }', { q: 'e' })).toBe(cost('{ users(query: "e", first: 100) { totalCount } }'));
    expect(cost('{ users(query: "", first: 100) { totalCount } }')).toBe(cost('{ users(first: 100) { totalCount } }'));
    expect(cost('{ auditRecords(first: 10, filter: { actions: [CREATE] }) { nodes { id } } }')).toBe(1 + 10 * SEARCH_FACTOR + 10 * 2);
  });

  test('an offset weighs the rows it skips', () => {
    expect(cost('{ users(first: 10, offset: 5000) { nodes { id } } }')).toBe(1 + 5010 + 10 * 2);
  });

  test('a hundred aliased searches with their counts are over the default limit; the benchmark\'s nested page stays well inside it', () => {
    expect(cost(aliased(100, 'users(query: "e", first: 100) { totalCount }'))).toBeGreaterThan(DEFAULT_MAX_COST);
    const nested = cost(NESTED_PAGE);
    // 25 users, each with 4 fields and a page of 5 subscriptions with its count, and the users' count.
    expect(nested).toBe(1 + 25 + 25 * (1 + 4 + (1 + 5 + COUNTED_ROWS)) + COUNTED_ROWS);
    expect(nested).toBeLessThan(DEFAULT_MAX_COST / 20);
  });
});

describe('root fields per operation', () => {
  let h: Harness;
  let account: TestAccount;
  let statements = 0;
  beforeAll(async () => {
    // A key's use is written off the request's path, at most once a minute (credential-usage.ts): not a statement of the request.
    h = await startHarness({ onQuery: (sql) => (statements += /set last_used_at = /.test(sql) ? 0 : 1) });
    account = await h.createAccount();
  });
  afterAll(async () => {
    await h?.close();
  });

  test(`more than ${DEFAULT_MAX_ROOT_FIELDS} root fields (aliases counted, through fragments) are refused before anything runs`, async () => {
    for (const query of [aliased(DEFAULT_MAX_ROOT_FIELDS + 1, 'viewer { id }'), `{ ...Many a20: users { totalCount } } fragment Many on Query { ${Array.from({ length: 20 }, (_, i) => `v${i}: viewer { id }`).join(' ')} }`]) {
      const before = statements;
      const refused = await h.graphql(query, {}, account.key);
      // Only the credential's look-up ran: no resolver, no SQL of the operation.
      expect(statements - before).toBeLessThanOrEqual(1);
      expect(refused.data).toBeUndefined();
      expect(refused.errors?.[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', queryLimit: 'rootFields' });
      expect(refused.errors?.[0].message).toMatch(/21 root fields, more than the limit of 20/);
    }
  });

  test('the limit itself passes, and introspection fields beside it are not counted', async () => {
    const passed = await h.graphql(`{ __typename ${aliased(DEFAULT_MAX_ROOT_FIELDS, 'users(first: 1) { totalCount }').slice(1, -1)} }`, {}, account.key);
    expect(passed.errors).toBeUndefined();
    expect(passed.data?.a19.totalCount).toBe(1);
    // The same response key twice is one field (execution merges them).
    expect((await h.graphql(`{ ${aliased(DEFAULT_MAX_ROOT_FIELDS, 'users(first: 1) { totalCount }').slice(1, -1)} a0: users(first: 1) { totalCount } }`, {}, account.key)).errors).toBeUndefined();
  });

  test('GRAPHQL_MAX_ROOT_FIELDS sets the limit', async () => {
    const strict = await startHarness({ settings: { graphqlMaxRootFields: 2 } });
    try {
      const strictAccount = await strict.createAccount();
      expect((await strict.graphql('{ a: users { totalCount } b: users { totalCount } }', {}, strictAccount.key)).errors).toBeUndefined();
      const refused = await strict.graphql('{ a: users { totalCount } b: users { totalCount } c: users { totalCount } }', {}, strictAccount.key);
      expect(refused.errors?.[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', queryLimit: 'rootFields' });
    } finally {
      await strict.close();
    }
  });
});
