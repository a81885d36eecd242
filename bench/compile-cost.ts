// `node --expose-gc dist/bench/compile-cost.js`: what compiling a `/graphql` document with
// graphql-jit costs against parsing and validating it (what Apollo does for every new document),
// and the heap a compiled query keeps, per character of its document's text: the figures behind
// `COMPILED_TEXT_BUDGET` and `LONGEST_COMPILED_TEXT` (src/faces/graphql/compiled-queries.ts). No
// database: the schema alone. COMPILE_COST_ROUNDS (3) rounds of COMPILE_COST_RUNS (10) per
// document; 100 distinct copies of each document (told apart by their aliases) for the heap.
// Markdown on stdout.
import 'reflect-metadata';
import { getIntrospectionQuery, parse, validate, type GraphQLSchema } from 'graphql';
import { compileQuery, isCompiledQuery } from 'graphql-jit';
import { appSchema } from '../src/app/features.js';

const rounds = Number(process.env.COMPILE_COST_ROUNDS ?? 3);
const runs = Number(process.env.COMPILE_COST_RUNS ?? 10);
const COPIES = 100;

const USER_FIELDS = 'id name email role timeZone color jobTitle description htmlUrl avatarUrl';
/** Each document, as the `copy`-th of its kind: the same shape under other aliases, so no two texts are equal. */
const documents: Record<string, (copy: number) => string> = {
  'the nested page of the benchmarks': (copy) => `{ p${copy}: users(first: 25) { totalCount nodes { id name email role notificationSubscriptions(first: 5) { totalCount } } } }`,
  'introspection (an explorer\'s)': (copy) => getIntrospectionQuery().replace('query IntrospectionQuery', `query IntrospectionQuery${copy}`),
  '40 aliased nested pages (hostile)': (copy) =>
    `{ ${Array.from({ length: 40 }, (_, i) => `u${copy}x${i}: users(first: 1) { nodes { ${USER_FIELDS} notificationSubscriptions(first: 1) { totalCount nodes { id subscribableName } } } }`).join(' ')} }`,
  '1,200 aliases of one field (hostile)': (copy) => `{ viewer { ${Array.from({ length: 1200 }, (_, i) => `a${copy}x${i}: name`).join(' ')} } }`,
};

function millisecondsEach(work: () => void): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < runs; i++) work();
  return Number(process.hrtime.bigint() - start) / runs / 1e6;
}

function compiled(schema: GraphQLSchema, text: string) {
  const query = compileQuery(schema, parse(text));
  if (!isCompiledQuery(query)) throw new Error(`graphql-jit refused a benchmark document: ${query.errors?.map((e) => e.message).join('; ')}`);
  return query;
}

function heapPerCompiled(schema: GraphQLSchema, make: (copy: number) => string): number {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (!collect) throw new Error('run with node --expose-gc');
  const texts = Array.from({ length: COPIES }, (_, copy) => make(copy + 1));
  const documentsParsed = texts.map((text) => parse(text));
  collect();
  const before = process.memoryUsage().heapUsed;
  const kept = documentsParsed.map((document) => compileQuery(schema, document));
  collect();
  const after = process.memoryUsage().heapUsed;
  if (kept.length !== COPIES) throw new Error('lost a compiled query');
  return (after - before) / COPIES;
}

const schema = await appSchema();
const lines = [
  `Compile cost, ${new Date().toISOString()}, Node ${process.version}; ${rounds} rounds of ${runs} runs per document (median round), heap over ${COPIES} compiled copies.`,
  '',
  '| document | characters | parse + validate, ms | compile, ms | compile / parse + validate | heap kept per compiled query | bytes per character |',
  '|---|---|---|---|---|---|---|',
];
for (const [name, make] of Object.entries(documents)) {
  const text = make(0);
  const problems = validate(schema, parse(text));
  if (problems.length) throw new Error(`${name} is not valid: ${problems[0]!.message}`);
  compiled(schema, text);
  const validating: number[] = [];
  const compiling: number[] = [];
  for (let round = 0; round < rounds; round++) {
    validating.push(millisecondsEach(() => validate(schema, parse(text))));
    compiling.push(millisecondsEach(() => compiled(schema, text)));
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const heap = heapPerCompiled(schema, make);
  lines.push(`| ${name} | ${text.length} | ${median(validating).toFixed(2)} | ${median(compiling).toFixed(2)} | ${(median(compiling) / median(validating)).toFixed(1)}x | ${(heap / 1024).toFixed(0)} KB | ${(heap / text.length).toFixed(0)} |`);
}
process.stdout.write(`${lines.join('\n')}\n`);
process.exit(0);
