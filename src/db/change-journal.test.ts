import type { EntityManager } from '@mikro-orm/sql';
import { openTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { recordChange, type Change, type CommitHook, type WriteOrigin } from './change-journal.js';

let database: TestDatabase;
const statements: string[] = [];

/** A hook that writes what it is handed into a table of the same transaction, as the audit trail does. */
const seenByHook: CommitHook = {
  name: 'test.table',
  callsBeforeCommit: (changes, origin) =>
    changes.map((change) => ({ name: 'journal_seen_add', args: [{ value: change.action }, { value: change.resource.id }, { value: origin.face }] })),
};
/** A hook whose call the database refuses, after the other hooks' calls of the same statement ran. */
const failing: CommitHook = { name: 'test.failing', callsBeforeCommit: () => [{ name: 'journal_refuse', args: [] }] };

const change = (id: string): Change => ({ accountId: 'A', action: 'update', resource: { type: 'app', id } });

async function seen(): Promise<Array<{ action: string; resource_id: string; face: string }>> {
  return database.em().execute('select action, resource_id, face from journal_seen order by id');
}

beforeAll(async () => {
  database = await openTestDatabase({ onQuery: (sql) => statements.push(sql) });
  await database.em().execute('create table journal_seen (id serial primary key, action text, resource_id text, face text)');
  await database.em().execute(`create function journal_seen_add(action text, resource_id text, face text) returns void language sql
                                 as $$ insert into journal_seen (action, resource_id, face) values (action, resource_id, face) $$`);
  await database.em().execute(`create function journal_refuse() returns void language plpgsql as $$ begin raise exception 'hook failed'; end $$`);
  // The features' own hooks (the audit trail) run too, and record changes against a real account.
  await database.em().execute(`insert into accounts (id, name) values ('A', 'Change journal')`);
});
afterAll(async () => database.close());
beforeEach(async () => database.em().execute('truncate journal_seen'));

const runner = () => database.transactions.withCommitHooks([seenByHook]).onBehalfOf({ face: 'rest' } satisfies WriteOrigin);

test('the hooks get the changes of a committed transaction, in order, with the runner origin', async () => {
  await runner().run(database.em(), async (tx) => {
    recordChange(tx, change('one'));
    recordChange(tx, change('two'));
  });
  expect(await seen()).toEqual([
    { action: 'update', resource_id: 'one', face: 'rest' },
    { action: 'update', resource_id: 'two', face: 'rest' },
  ]);
});

test('a transaction that fails after recording leaves nothing of its hooks', async () => {
  await expect(
    runner().run(database.em(), async (tx) => {
      recordChange(tx, change('lost'));
      await tx.execute('select 1 / 0');
    }),
  ).rejects.toThrow();
  expect(await seen()).toEqual([]);
});

test('a transaction retried after a serialization failure hands the hooks the committed run only', async () => {
  let attempt = 0;
  await runner().run(database.em(), async (tx) => {
    attempt++;
    recordChange(tx, change(`attempt-${attempt}`));
    if (attempt === 1) await tx.execute(`do $$ begin raise exception 'collided' using errcode = '40001'; end $$`);
  });
  expect(attempt).toBe(2);
  expect(await seen()).toEqual([{ action: 'update', resource_id: 'attempt-2', face: 'rest' }]);
});

test('a nested run joins the outer journal; a hook that fails rolls the change back', async () => {
  await runner().run(database.em(), async (tx) => {
    recordChange(tx, change('outer'));
    await runner().run(tx, async (inner: EntityManager) => recordChange(inner, change('inner')));
  });
  expect((await seen()).map((row) => row.resource_id)).toEqual(['outer', 'inner']);

  await expect(
    database.transactions.withCommitHooks([seenByHook, failing]).run(database.em(), async (tx) => {
      await tx.execute(`insert into journal_seen (action, resource_id, face) values ('direct', 'write', 'none')`);
      recordChange(tx, change('never'));
    }),
  ).rejects.toThrow('hook failed');
  expect((await seen()).map((row) => row.resource_id)).toEqual(['outer', 'inner']);
});

test("every hook's calls are made in one statement, a hook holding a lock to the commit last whatever order it was added in", async () => {
  const holdingLock: CommitHook = {
    name: 'test.locking',
    locksUntilCommit: true,
    callsBeforeCommit: (changes) => changes.map((change) => ({ name: 'journal_seen_add', args: [{ value: 'locked' }, { value: change.resource.id }, { value: 'lock' }] })),
  };
  statements.length = 0;
  await database.transactions.withCommitHooks([holdingLock, seenByHook]).onBehalfOf({ face: 'rest' }).run(database.em(), async (tx) => {
    recordChange(tx, change('first'));
    recordChange(tx, change('second'));
  });
  expect((await seen()).map((row) => `${row.action} ${row.resource_id}`)).toEqual(['update first', 'update second', 'locked first', 'locked second']);
  expect(statements.filter((sql) => sql.includes('journal_seen_add'))).toHaveLength(1);
});

test('recording outside a write transaction is refused rather than lost', () => {
  expect(() => recordChange(database.em(), change('stray'))).toThrow(/outside a write transaction|inside a transaction/);
});
