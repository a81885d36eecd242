import { getOperationAST, parse, type OperationDefinitionNode } from 'graphql';
import { ACCESS_TABLE, type AccessRow } from '../auth/access-table.js';
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

/** The access table as docs/security.md shows it: one row per operation, with every face it is reachable on. */
export function renderAccessTable(): string {
  const faces = facesOf();
  const lines = [
    '| operation | faces | the credential must hold | target | who may |',
    '|---|---|---|---|---|',
  ];
  for (const [coordinate, row] of Object.entries(ACCESS_TABLE) as [string, AccessRow][]) {
    const holds = [...row.requires.map((requirement) => `\`${requirement}\``), ...(row.managesCredentials ? ['not a rolled key in its grace period', 'a browser sign-in\'s token: a sign-in within `STEP_UP_MAX_AGE_SECONDS`'] : [])].join(', ') || 'any credential';
    const reachable = ['GraphQL', ...[...new Set(faces.get(coordinate) ?? [])]].join('<br>');
    lines.push(`| \`${coordinate}\` | ${reachable} | ${holds} | ${row.target} | ${cell(row.rule)} |`);
  }
  return `${TABLE_START}\n${lines.join('\n')}\n${TABLE_END}`;
}

/** `markdown` with its table replaced by today's rendering; refuses a page without the markers. */
export function withAccessTable(markdown: string): string {
  const start = markdown.indexOf(TABLE_START);
  const end = markdown.indexOf(TABLE_END);
  if (start === -1 || end < start) throw new Error('docs/security.md has no access-table markers');
  return `${markdown.slice(0, start)}${renderAccessTable()}${markdown.slice(end + TABLE_END.length)}`;
}
