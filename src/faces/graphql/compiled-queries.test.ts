import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import {
  getIntrospectionQuery,
  getOperationAST,
  GraphQLEnumType,
  GraphQLError,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  parse,
  type ExecutionResult,
} from 'graphql';
import { startHarness, type Harness, type TestAccount } from '../../../test/support/harness.js';
import { InvalidInputError } from '../../errors/domain-errors.js';
import { COMPILED_TEXT_BUDGET, compiledQueriesExecutor, LONGEST_COMPILED_TEXT, RUNS_BEFORE_COMPILING, type QueryExecutor } from './compiled-queries.js';

const Level = new GraphQLEnumType({ name: 'Level', values: { LOW: { value: 'low' }, HIGH: { value: 'high' } } });
const Item = new GraphQLObjectType({
  name: 'Item',
  fields: {
    id: { type: new GraphQLNonNull(GraphQLString) },
    level: { type: Level },
    later: { type: GraphQLInt, resolve: async (item: { id: string }) => item.id.length },
    refused: { type: GraphQLString, resolve: () => { throw new InvalidInputError('refused here'); } },
    missing: { type: new GraphQLNonNull(GraphQLString), resolve: () => null },
  },
});
const schema = new GraphQLSchema({
  query: new GraphQLObjectType({
    name: 'Query',
    fields: {
      items: {
        type: new GraphQLList(Item),
        args: { first: { type: GraphQLInt }, level: { type: Level } },
        resolve: (_root, args: { first?: number; level?: string }) => [{ id: 'a', level: 'low' }, { id: 'bb', level: 'high' }].filter((item) => !args.level || item.level === args.level).slice(0, args.first ?? 10),
      },
    },
  }),
  mutation: new GraphQLObjectType({ name: 'Mutation', fields: { touch: { type: GraphQLString, resolve: () => 'touched' } } }),
});

/** Runs a document through the executor as Apollo does: the same parsed document for the same text. */
function runner(executor: QueryExecutor) {
  const documents = new Map<string, ReturnType<typeof parse>>();
  return async (text: string, variables?: Record<string, unknown>): Promise<ExecutionResult> => {
    if (!documents.has(text)) documents.set(text, parse(text));
    const document = documents.get(text)!;
    const operation = getOperationAST(document)!;
    const requestContext = { schema, document, source: text, operation, request: { query: text, variables }, context: {} };
    return executor(requestContext as unknown as Parameters<QueryExecutor>[0]);
  };
}

const answered = (result: ExecutionResult) => JSON.parse(JSON.stringify(result));

describe('the executor of /graphql', () => {
  test('compiles a query the second time it runs, and answers the same data and errors as graphql-js', async () => {
    const compiled: string[] = [];
    const run = runner(compiledQueriesExecutor({ onCompiled: (operation) => compiled.push(operation.name?.value ?? '(anonymous)') }));
    const text = 'query Page($first: Int) { items(first: $first) { id level later refused } }';
    const first = await run(text, { first: 2 });
    expect(compiled).toEqual([]);
    const runs = [first];
    for (let i = 0; i < RUNS_BEFORE_COMPILING + 1; i++) runs.push(await run(text, { first: 2 }));
    expect(compiled).toEqual(['Page']);
    expect(answered(first).data).toEqual({ items: [{ id: 'a', level: 'LOW', later: 1, refused: null }, { id: 'bb', level: 'HIGH', later: 2, refused: null }] });
    for (const later of runs.slice(1)) expect(answered(later)).toEqual(answered(first));
    // The errors Apollo formats are graphql-js's, carrying what the resolver threw.
    const last = runs[runs.length - 1]!;
    for (const error of last.errors!) {
      expect(error).toBeInstanceOf(GraphQLError);
      expect(error.extensions).toEqual({});
      expect(error.originalError).toBeInstanceOf(InvalidInputError);
    }
    expect(answered(last).errors[0]).toEqual({ message: 'Invalid Input Provided', locations: [{ line: 1, column: 65 }], path: ['items', 0, 'refused'] });
  });

  test('a null in a non-null field nulls its parent alike, compiled or not', async () => {
    const run = runner(compiledQueriesExecutor());
    const text = '{ items { id missing } }';
    const results = [await run(text), await run(text), await run(text)].map(answered);
    expect(results[0].data).toEqual({ items: [null, null] });
    expect(results[0].errors).toHaveLength(2);
    expect(results[1]).toEqual(results[0]);
    expect(results[2]).toEqual(results[0]);
  });

  test('directives and fragments follow the variables of each run, compiled or not', async () => {
    const compiled: string[] = [];
    const run = runner(compiledQueriesExecutor({ onCompiled: (operation) => compiled.push(operation.operation) }));
    const text = 'query($with: Boolean!) { items { ...Fields later @include(if: $with) } } fragment Fields on Item { id level @skip(if: $with) }';
    const answers = [];
    for (const value of [true, false, true, false]) answers.push(answered(await run(text, { with: value })));
    expect(compiled).toEqual(['query']);
    const withLater = { data: { items: [{ id: 'a', later: 1 }, { id: 'bb', later: 2 }] } };
    const withLevel = { data: { items: [{ id: 'a', level: 'LOW' }, { id: 'bb', level: 'HIGH' }] } };
    expect(answers).toEqual([withLater, withLevel, withLater, withLevel]);
  });

  test('refused variables get graphql-js\'s own messages on a compiled query too', async () => {
    const run = runner(compiledQueriesExecutor());
    const text = 'query($first: Int) { items(first: $first) { id } }';
    await run(text, { first: 1 });
    await run(text, { first: 1 });
    const refused = answered(await run(text, { first: 'many' }));
    expect(refused.data).toBeUndefined();
    expect(refused.errors[0].message).toBe('Variable "$first" got invalid value "many"; Int cannot represent non-integer value: "many"');
  });

  test('mutations and operations with a variable of another type never compile', async () => {
    const compiled: string[] = [];
    const run = runner(compiledQueriesExecutor({ onCompiled: (operation) => compiled.push(operation.operation) }));
    for (let i = 0; i < 3; i++) {
      expect(answered(await run('mutation { touch }')).data).toEqual({ touch: 'touched' });
      expect(answered(await run('query($level: Level) { items(level: $level) { id } }', { level: 'HIGH' })).data).toEqual({ items: [{ id: 'bb' }] });
    }
    expect(compiled).toEqual([]);
  });
});

describe('the compiled functions the executor keeps', () => {
  /** A query of `length` characters, a comment making up the length: the same operation, told apart by its text. */
  const padded = (name: string, length: number) => {
    const operation = `query ${name} { items { id } }`;
    return `# ${'x'.repeat(length - operation.length - 3)}\n${operation}`;
  };

  test('a document longer than the longest compiled one always runs in graphql-js', async () => {
    const compiled: string[] = [];
    const run = runner(compiledQueriesExecutor({ onCompiled: (operation) => compiled.push(operation.name!.value) }));
    const long = padded('Long', LONGEST_COMPILED_TEXT + 1);
    const short = padded('Short', LONGEST_COMPILED_TEXT);
    for (let i = 0; i < 3; i++) {
      expect(answered(await run(long)).data).toEqual({ items: [{ id: 'a' }, { id: 'bb' }] });
      await run(short);
    }
    expect(compiled).toEqual(['Short']);
  });

  test('past the budget the least recently run goes back to graphql-js, and compiles again if it keeps coming', async () => {
    const compiled: string[] = [];
    const run = runner(compiledQueriesExecutor({ onCompiled: (operation) => compiled.push(operation.name!.value) }));
    const fitting = Math.floor(COMPILED_TEXT_BUDGET / LONGEST_COMPILED_TEXT);
    const names = Array.from({ length: fitting + 1 }, (_, i) => `Q${i}`);
    const documents = names.map((name) => padded(name, LONGEST_COMPILED_TEXT));
    for (const document of documents.slice(0, fitting)) for (let i = 0; i <= RUNS_BEFORE_COMPILING; i++) await run(document);
    expect(compiled).toEqual(names.slice(0, fitting));
    // Q0 runs again, so Q1 is now the least recently run: the next compilation pushes it out.
    await run(documents[0]!);
    for (let i = 0; i <= RUNS_BEFORE_COMPILING; i++) await run(documents[fitting]!);
    expect(compiled).toEqual(names);
    await run(documents[0]!);
    expect(compiled).toEqual(names);
    for (let i = 0; i <= RUNS_BEFORE_COMPILING; i++) expect(answered(await run(documents[1]!)).data).toEqual({ items: [{ id: 'a' }, { id: 'bb' }] });
    expect(compiled).toEqual([...names, 'Q1']);
  });
});

describe('/graphql answers a repeated query as it answered it the first time', () => {
  let h: Harness;
  let account: TestAccount;
  beforeAll(async () => {
    h = await startHarness();
    account = await h.createAccount();
    await h.createUser(account, { name: 'Compiled Reader' });
  });
  afterAll(async () => {
    await h.close();
  });

  async function thrice(query: string, variables: Record<string, unknown>, key = account.key) {
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await h.graphql(query, variables, key));
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
    return answers[0]!;
  }

  test('a nested page, a refused argument, a field another user may not read, and introspection', async () => {
    const page = await thrice('query($first: Int!) { users(first: $first) { totalCount nodes { id name role notificationSubscriptions(first: 5) { totalCount } } } }', { first: 25 });
    expect(page.errors).toBeUndefined();
    expect(page.data.users.nodes.length).toBeGreaterThanOrEqual(2);

    const refused = await thrice('query($first: Int!) { users(first: $first, query: "x", match: []) { totalCount } }', { first: 5 });
    expect(refused.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');

    const reader = await h.createUser(account, { name: 'Plain Reader' });
    const partial = await thrice('{ users(first: 25) { nodes { id notificationSubscriptions(first: 1) { totalCount } } } }', {}, reader.key);
    expect(partial.data.users.nodes.length).toBeGreaterThanOrEqual(2);
    expect(partial.errors?.map((error: { extensions: { code: string } }) => error.extensions.code)).toContain('FORBIDDEN');
    expect(partial.errors?.[0]?.path).toEqual(['users', 'nodes', expect.any(Number), 'notificationSubscriptions']);

    const introspection = await thrice(getIntrospectionQuery(), {});
    expect(introspection.data.__schema.queryType.name).toBe('Query');
  });
});
