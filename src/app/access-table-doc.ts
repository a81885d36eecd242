import { getOperationAST, parse, type OperationDefinitionNode } from 'graphql';
import { ACCESS_TABLE, OPERATOR_COMMANDS, SCIM_ACCESS_TABLE, type AccessRow } from '../auth/access-table.js';
import { SCIM_BASE_PATH } from '../scim/scim.user.js';
import { features } from './features.js';

const TABLE_START = '<!-- access-table:start (npm run generate writes this table from src/auth/access-table.ts) -->';
const TABLE_END = '<!-- access-table:end -->';

function rootFieldsOf(source: string): string[] {
  const definition = getOperationAST(parse(source)) as OperationDefinitionNode;
  const type = definition.operation === 'query' ? 'Query' : definition.operation === 'mutation' ? 'Mutation' : 'Subscription';
  return definition.selectionSet.selections.flatMap((selection) => (selection.kind === 'Field' ? [`${type}.${selection.name.value}`] : []));
}

/** Where each operation is reachable besides GraphQL: the REST and SCIM rows that run it, the WebSocket for subscriptions. */
function facesOf(): Map<string, string[]> {
  const faces = new Map<string, string[]>();
  const add = (coordinate: string, face: string) => faces.set(coordinate, [...(faces.get(coordinate) ?? []), face]);
  for (const feature of features) {
    for (const route of feature.routes) for (const field of rootFieldsOf(route.operation.source)) add(field, `REST \`${route.method.toUpperCase()} ${route.path}\``);
    for (const route of feature.scimRoutes ?? []) for (const field of rootFieldsOf(route.operation.source)) add(field, `SCIM \`${route.method.toUpperCase()} ${SCIM_BASE_PATH}${route.path}\``);
  }
  for (const coordinate of Object.keys(ACCESS_TABLE)) if (coordinate.startsWith('Subscription.')) add(coordinate, 'WebSocket');
  return faces;
}

const cell = (text: string) => text.replace(/\|/g, '\\|');

const holdings = (row: AccessRow) => [
  ...row.requires.map((requirement) => `\`${requirement}\``),
  ...(row.managesCredentials ? ['not a rolled key in its grace period', 'a browser sign-in\'s token: a sign-in within `STEP_UP_MAX_AGE_SECONDS`'] : []),
].join(', ') || 'any credential';

/** The access table as docs/security.md shows it: one row per operation, with every face it is reachable on. */
export function renderAccessTable(): string {
  const faces = facesOf();
  const lines = [
    '| operation | faces | the credential must hold | target | who may |',
    '|---|---|---|---|---|',
  ];
  for (const [coordinate, row] of Object.entries(ACCESS_TABLE) as [string, AccessRow][]) {
    const reachable = ['GraphQL', ...[...new Set(faces.get(coordinate) ?? [])]].join('<br>');
    lines.push(`| \`${coordinate}\` | ${reachable} | ${holdings(row)} | ${row.target} | ${cell(row.rule)} |`);
  }
  const scim = ['', 'SCIM operations (checked before the request is read; the GraphQL operations they run are checked by their rows above):', '', '| SCIM operation | the credential must hold | target | who may |', '|---|---|---|---|'];
  for (const [operationId, row] of Object.entries(SCIM_ACCESS_TABLE) as [string, AccessRow][]) scim.push(`| \`${operationId}\` | ${holdings(row)} | ${row.target} | ${cell(row.rule)} |`);
  const operator = ['', 'Operator commands (`accessctl`: the operator\'s rights, recorded as the operator):', '', '| command | what it may do |', '|---|---|'];
  for (const [name, rule] of Object.entries(OPERATOR_COMMANDS)) operator.push(`| \`${name}\` | ${cell(rule)} |`);
  return `${TABLE_START}\n${[...lines, ...scim, ...operator].join('\n')}\n${TABLE_END}`;
}

/** `markdown` with its table replaced by today's rendering; refuses a page without the markers. */
export function withAccessTable(markdown: string): string {
  const start = markdown.indexOf(TABLE_START);
  const end = markdown.indexOf(TABLE_END);
  if (start === -1 || end < start) throw new Error('docs/security.md has no access-table markers');
  return `${markdown.slice(0, start)}${renderAccessTable()}${markdown.slice(end + TABLE_END.length)}`;
}
