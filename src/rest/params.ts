import { InvalidInputError, MissingArgumentError } from '../errors/domain-errors.js';
import { MAX_OFFSET_WINDOW } from '../graphql/connection.js';
import type { ParameterDescription } from './description.js';
import { excerpt, unstorableCharacter } from '../graphql/input-bounds.js';
import type { RestRequest } from './route.js';

export type Query = Record<string, string | string[] | undefined>;

export const CLASSIC_DEFAULT_LIMIT = 25;
export const CLASSIC_MAX_LIMIT = 100;
export const CLASSIC_MAX_WINDOW = MAX_OFFSET_WINDOW;

/** The last value of a single-valued parameter (a repeated one counts as given once, last wins). */
export function single(query: Query, name: string): string | undefined {
  const value = query[name];
  return Array.isArray(value) ? value[value.length - 1] : value;
}

export function list(query: Query, name: string): string[] {
  const plain = query[name];
  const bracketed = query[`${name}[]`];
  // Most requests give neither: no arrays to build for them.
  if (plain === undefined && bracketed === undefined) return [];
  const values = [plain, bracketed].flat().filter((value): value is string => typeof value === 'string');
  return values.flatMap((value) => value.split(',')).map((value) => value.trim()).filter(Boolean);
}

export function required(query: Query, name: string): string {
  const value = single(query, name);
  if (value === undefined || value.trim() === '') throw new MissingArgumentError(`${name} is required`);
  return value;
}

function integer(query: Query, name: string): number | undefined {
  const raw = single(query, name);
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d+$/.test(raw)) throw new InvalidInputError(`${name} must be a non-negative integer`);
  return Number(raw);
}

export function boolean(query: Query, name: string): boolean {
  const raw = single(query, name);
  if (raw === undefined || raw === '') return false;
  if (raw === 'true' || raw === 'false') return raw === 'true';
  throw new InvalidInputError(`${name} must be true or false`);
}

export interface ClassicPagination {
  limit: number;
  offset: number;
  total: boolean;
}

/** limit/offset/total: above 100 is served as 100; the window ends at 10000; bad values are 400. */
export function classicPagination(query: Query): ClassicPagination {
  const requested = integer(query, 'limit') ?? CLASSIC_DEFAULT_LIMIT;
  if (requested < 1) throw new InvalidInputError('limit must be at least 1');
  const limit = Math.min(requested, CLASSIC_MAX_LIMIT);
  const offset = integer(query, 'offset') ?? 0;
  if (offset + limit > CLASSIC_MAX_WINDOW) throw new InvalidInputError(`offset + limit must not exceed ${CLASSIC_MAX_WINDOW}`);
  return { limit, offset, total: boolean(query, 'total') };
}

export function cursorPagination(query: Query): { limit: number; cursor: string | undefined } {
  const requested = integer(query, 'limit') ?? CLASSIC_DEFAULT_LIMIT;
  if (requested < 1) throw new InvalidInputError('limit must be at least 1');
  const cursor = single(query, 'cursor');
  return { limit: Math.min(requested, CLASSIC_MAX_LIMIT), cursor: cursor || undefined };
}

/** `include[]` values, checked against what the route allows. */
export function includes(query: Query, allowed: readonly string[]): Set<string> {
  const values = list(query, 'include');
  const unknown = values.filter((value) => !allowed.includes(value));
  if (unknown.length) {
    throw new InvalidInputError(`include[] does not accept ${unknown.slice(0, 5).map((value) => excerpt(value)).join(', ')}; allowed values: ${allowed.join(', ')}`);
  }
  return new Set(values);
}

/** A JSON body's top-level object, with the field that must hold the payload. */
export function bodyField(body: unknown, field: string): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new MissingArgumentError(`the request body must be a JSON object with "${field}"`);
  const value = (body as Record<string, unknown>)[field];
  if (value === undefined || value === null) throw new MissingArgumentError(`${field} is required`);
  return value;
}

/**
 * Described parameters: the document's schema and the route's check side by side, with the
 * bounds taken from the constants above, so the published bounds are the enforced ones.
 */
export function limitParameter(paging: 'classic' | 'cursor'): ParameterDescription<number | undefined> {
  return {
    name: 'limit',
    in: 'query',
    description: `Results per page (default ${CLASSIC_DEFAULT_LIMIT}). A larger value than ${CLASSIC_MAX_LIMIT} is served, and echoed, as ${CLASSIC_MAX_LIMIT}.` +
      (paging === 'classic' ? ` offset + limit must not exceed ${CLASSIC_MAX_WINDOW}.` : ''),
    schema: { type: 'integer', minimum: 1, default: CLASSIC_DEFAULT_LIMIT },
    read: ({ query }) => {
      const value = integer(query, 'limit');
      if (value !== undefined && value < 1) throw new InvalidInputError('limit must be at least 1');
      return value;
    },
  };
}

export const offsetParameter: ParameterDescription<number | undefined> = {
  name: 'offset',
  in: 'query',
  description: `Where the page starts, from 0. offset + limit must not exceed ${CLASSIC_MAX_WINDOW}.`,
  schema: { type: 'integer', minimum: 0, maximum: CLASSIC_MAX_WINDOW - 1, default: 0 },
  read: ({ query }) => integer(query, 'offset'),
};

export const totalParameter: ParameterDescription<boolean> = {
  name: 'total',
  in: 'query',
  description: '`total` is null unless this is true (counting costs time).',
  schema: { type: 'boolean', default: false },
  read: ({ query }) => boolean(query, 'total'),
};

export const cursorParameter: ParameterDescription<string | undefined> = {
  name: 'cursor',
  in: 'query',
  description: 'The `next_cursor` of the previous page; absent for the first page. Cursors are opaque and tamper-evident.',
  schema: { type: 'string' },
};

/** Classic pagination's parameters (the window rule spanning limit and offset is classicPagination's). */
export const classicPaginationParameters: ParameterDescription[] = [limitParameter('classic'), offsetParameter, totalParameter];

export function includeParameter(allowed: readonly string[], description: string): ParameterDescription<Set<string>> {
  return {
    name: 'include[]',
    in: 'query',
    description: `${description} Repeat the parameter or separate values with commas; any other value is 400, listing the allowed ones.`,
    explode: true,
    schema: { type: 'array', items: { type: 'string', enum: [...allowed] } },
    read: ({ query }) => includes(query, allowed),
  };
}

/** A comma (or repeated, or `name[]`) list of values, each one of `allowed`. */
export function enumListParameter(
  name: string,
  allowed: readonly string[],
  description: string,
  read: ParameterDescription<unknown>['read'],
  required = false,
): ParameterDescription {
  return {
    name,
    in: 'query',
    description: `${description} One or more of ${allowed.join(', ')}, repeated or separated by commas.`,
    required,
    explode: true,
    schema: { type: 'array', items: { type: 'string', enum: [...allowed] } },
    read,
  };
}

export function pathParameter(name: string, description: string): ParameterDescription<string> {
  return { name, in: 'path', required: true, description, schema: { type: 'string', minLength: 1 } };
}

/**
 * Every string of a REST request (path, query, body, and the body's keys) that PostgreSQL could
 * not store, named the REST way (`user.name`, `query`, `users[2].email`). The walk is iterative:
 * a body nested 10,000 levels deep costs a loop, not the stack.
 */
export function unstorableStrings(request: Pick<RestRequest, 'params' | 'query' | 'body'>): string[] {
  const problems: string[] = [];
  // Each value knows its parent and key; its REST name is spelled out only when it is refused.
  type Pending = { value: unknown; where?: string; parent?: Pending; key?: string | number };
  const pending: Pending[] = [];
  for (const name in request.params) pending.push({ value: request.params[name], where: `path parameter ${name}` });
  for (const name in request.query) pending.push({ value: request.query[name], where: excerpt(name).slice(1, -1) });
  pending.push({ value: request.body, where: '' });
  const whereOf = (node: Pending): string => {
    const chain: Pending[] = [];
    let current: Pending | undefined = node;
    for (; current && current.where === undefined; current = current.parent) chain.push(current);
    let where = current?.where ?? '';
    for (const link of chain.reverse()) {
      if (typeof link.key === 'number') where = `${where}[${link.key}]`;
      else where = where ? `${where}.${excerpt(link.key).slice(1, -1)}` : excerpt(link.key).slice(1, -1);
    }
    return where;
  };
  while (pending.length && problems.length < 10) {
    const node = pending.pop()!;
    const { value } = node;
    if (typeof value === 'string') {
      const unstorable = unstorableCharacter(value);
      if (unstorable) problems.push(`${whereOf(node) || 'the request body'} ${unstorable}`);
    } else if (Array.isArray(value)) {
      value.forEach((element, index) => pending.push({ value: element, parent: node, key: index }));
    } else if (typeof value === 'object' && value !== null) {
      for (const [key, element] of Object.entries(value)) {
        const unstorableKey = unstorableCharacter(key);
        if (unstorableKey) problems.push(`the field name ${excerpt(key)} ${unstorableKey}`);
        else pending.push({ value: element, parent: node, key });
      }
    }
  }
  return problems;
}
