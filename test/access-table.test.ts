import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from '@jest/globals';
import { GraphQLObjectType, GraphQLSchema, GraphQLString } from 'graphql';
import { renderAccessTable } from '../src/app/access-table-doc.js';
import { appSchema, features } from '../src/app/features.js';
import { commands, operatorRowOf } from '../src/cli/command-list.js';
import { ACCESS_TABLE, OPERATOR_COMMANDS, SCIM_ACCESS_TABLE, scimAccessRow, type AccessRow } from '../src/auth/access-table.js';
import { assertAccess } from '../src/auth/auth-checker.js';
import type { Principal } from '../src/auth/principal.js';
import { USER_ROLES, type UserRole } from '../src/auth/roles.js';
import { SCOPES } from '../src/auth/scopes.js';
import { installAccessChecks } from '../src/graphql/access-checks.js';

/**
 * The access table is the one declaration of who may do what: the schema refuses to build without a
 * row for every operation, security reviewers read it in docs/security.md, and every kind of
 * credential meets each row's requirements as the rules below restate them.
 */
const repository = path.resolve(import.meta.dirname, '..');

describe('the table and the schema', () => {
  test('every root field of the schema has a row, and every row names a field of the schema', async () => {
    const schema = await appSchema();
    const rootFields = ['Query', 'Mutation', 'Subscription'].flatMap((name) => Object.keys((schema.getType(name) as GraphQLObjectType).getFields()).map((field) => `${name}.${field}`));
    expect(rootFields.filter((coordinate) => !(coordinate in ACCESS_TABLE))).toEqual([]);
    for (const coordinate of Object.keys(ACCESS_TABLE)) {
      const [type, field] = coordinate.split('.') as [string, string];
      expect([coordinate, Boolean((schema.getType(type) as GraphQLObjectType | undefined)?.getFields()[field])]).toEqual([coordinate, true]);
    }
  });

  test('a schema with an operation the table does not name, or a row naming no operation, is refused', () => {
    const query = new GraphQLObjectType({ name: 'Query', fields: { declared: { type: GraphQLString }, undeclared: { type: GraphQLString } } });
    const refusal = (table: Record<string, AccessRow>) => {
      try {
        installAccessChecks(new GraphQLSchema({ query }), table, () => {});
        return 'installed';
      } catch (error) {
        return (error as Error).message;
      }
    };
    const row: AccessRow = { requires: [], target: 'account', rule: 'test' };
    expect(refusal({ 'Query.declared': row })).toMatch(/Query\.undeclared has no row/);
    expect(refusal({ 'Query.declared': row, 'Query.undeclared': row, 'Query.gone': row })).toMatch(/names Query\.gone, which the schema does not have/);
    expect(refusal({ 'Query.declared': row, 'Query.undeclared': row })).toBe('installed');
  });

  test('every SCIM route and every operator command has its row, and every such row names one', () => {
    const scimOperations = features.flatMap((feature) => (feature.scimRoutes ?? []).map((route) => route.description.operationId));
    expect(scimOperations.filter((operationId) => !(operationId in SCIM_ACCESS_TABLE))).toEqual([]);
    expect(Object.keys(SCIM_ACCESS_TABLE).filter((operationId) => !scimOperations.includes(operationId))).toEqual([]);
    expect(() => scimAccessRow('noSuchScimOperation')).toThrow(/has no row/);
    const names = commands.map((command) => command.name);
    expect(names.filter((name) => !(name in OPERATOR_COMMANDS))).toEqual([]);
    expect(Object.keys(OPERATOR_COMMANDS).filter((name) => !names.includes(name))).toEqual([]);
    expect(() => operatorRowOf({ ...commands[0]!, name: 'no such command' })).toThrow(/has no row/);
  });

  test('docs/security.md shows the table as it is (npm run generate writes it)', () => {
    expect(readFileSync(path.join(repository, 'docs/security.md'), 'utf8')).toContain(renderAccessTable());
  });
});

interface Kind {
  name: string;
  principal: Principal;
  /** Restated independently of the checker: what this credential holds. */
  holds: { scopes?: ReadonlySet<string>; write: boolean; canUpdateUser: boolean; accountAdmin: boolean; rolledOver?: boolean };
}

const base = { accountId: 'PACCOUN', credentialId: 'cred', rateLimitKey: 'k' };
const MANAGERS = new Set<UserRole>(['owner', 'admin']);
const READ_ONLY = new Set<UserRole>(['read_only_user', 'read_only_limited_user']);

function kinds(): Kind[] {
  const list: Kind[] = [
    { name: 'full-access account key', principal: { ...base, kind: 'account_key', readOnly: false }, holds: { write: true, canUpdateUser: true, accountAdmin: true } },
    { name: 'read-only account key', principal: { ...base, kind: 'account_key', readOnly: true }, holds: { write: false, canUpdateUser: false, accountAdmin: true } },
    { name: 'full-access account key in its grace period', principal: { ...base, kind: 'account_key', readOnly: false, supersededAt: new Date() }, holds: { write: true, canUpdateUser: true, accountAdmin: true, rolledOver: true } },
  ];
  for (const role of USER_ROLES) {
    const holds = { write: !READ_ONLY.has(role), canUpdateUser: MANAGERS.has(role), accountAdmin: MANAGERS.has(role) };
    list.push({ name: `user key, ${role}`, principal: { ...base, kind: 'user_key', userId: 'PUSER01', role }, holds });
    for (const scopes of [SCOPES, SCOPES.filter((scope) => !scope.endsWith('.write')), ['users.read']]) {
      list.push({ name: `token of a ${role} with ${scopes.length} scopes`, principal: { ...base, kind: 'oauth', userId: 'PUSER01', role, scopes: new Set(scopes) }, holds: { ...holds, scopes: new Set(scopes) } });
    }
  }
  for (const scopes of [SCOPES, ['users.read'], ['users.read', 'users.write']]) {
    const set = new Set<string>(scopes);
    list.push({ name: `client-credentials app with ${scopes.join(' ')}`, principal: { ...base, kind: 'oauth_app', clientId: 'app', scopes: set }, holds: { scopes: set, write: scopes.some((scope) => scope.endsWith('.write')), canUpdateUser: set.has('users.write'), accountAdmin: true } });
  }
  return list;
}

/** The row's answer for a credential, restated from the rules: scopes first, then write, can_update_user, account_admin, then the grace period. */
function expected(row: AccessRow, kind: Kind): 'allowed' | 'FORBIDDEN' {
  for (const requirement of row.requires) {
    if (requirement === 'write' ? !kind.holds.write : requirement === 'can_update_user' ? !kind.holds.canUpdateUser : requirement === 'account_admin' ? !kind.holds.accountAdmin : kind.holds.scopes !== undefined && !kind.holds.scopes.has(requirement)) return 'FORBIDDEN';
  }
  if (row.managesCredentials && (!kind.holds.write || kind.holds.rolledOver)) return 'FORBIDDEN';
  return 'allowed';
}

test('every row x every kind of credential: the check allows exactly what the row requires', () => {
  const mismatches: string[] = [];
  let cells = 0;
  for (const [coordinate, row] of Object.entries(ACCESS_TABLE) as [string, AccessRow][]) {
    for (const kind of kinds()) {
      const context = { authentication: { status: 'authenticated', principal: kind.principal } };
      let actual: string;
      try {
        assertAccess(row, context);
        actual = 'allowed';
      } catch (error) {
        actual = (error as { kind?: string }).kind === 'forbidden' ? 'FORBIDDEN' : String(error);
      }
      cells++;
      if (actual !== expected(row, kind)) mismatches.push(`${coordinate} with ${kind.name}: expected ${expected(row, kind)}, got ${actual}`);
    }
    expect(() => assertAccess(row, { authentication: { status: 'anonymous' } })).toThrow(/uthenticat/);
  }
  expect(mismatches).toEqual([]);
  expect(cells).toBeGreaterThan(Object.keys(ACCESS_TABLE).length * 30);
});
