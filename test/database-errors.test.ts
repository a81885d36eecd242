import { isDatabaseUnavailable } from '../src/db/database-errors.js';

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

test('what real outages throw is "unavailable", wrapped or not', () => {
  const outages = [
    new Error('Connection terminated unexpectedly'),
    new Error('Connection terminated due to connection timeout', { cause: new Error('Connection terminated unexpectedly') }),
    new Error('timeout exceeded when trying to connect'),
    new Error('Cannot use a pool after calling end on the pool'),
    new Error('Client has encountered a connection error and is not queryable'),
    new Error('Client was closed and is not queryable'),
    new Error('PGlite is closed'),
    withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'),
    withCode('canceling statement due to statement timeout', '57014'),
    withCode('terminating connection due to administrator command', '57P01'),
    withCode('the database system is shutting down', '57P03'),
    new Error('query failed', { cause: withCode('read ECONNRESET', 'ECONNRESET') }),
    // A failover: the router's primary is still finishing its promotion, or was just demoted.
    withCode('cannot execute UPDATE in a read-only transaction', '25006'),
    new Error('commit not confirmed by a synchronous standby (its wait was cancelled): the write may not survive a failover'),
  ];
  expect(outages.filter((error) => !isDatabaseUnavailable(error)).map((error) => error.message)).toEqual([]);
});

test('defects and bad data are not outages', () => {
  const defects = [
    withCode('column "name_gone" does not exist', '42703'),
    withCode('duplicate key value violates unique constraint "users_email"', '23505'),
    new TypeError("Cannot read properties of undefined (reading 'id')"),
    'a string',
    undefined,
  ];
  expect(defects.filter((error) => isDatabaseUnavailable(error))).toEqual([]);
});
