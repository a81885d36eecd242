import { greetFirstStart } from '../src/app/first-start.js';
import { AccountsService } from '../src/accounts/accounts.service.js';
import { openTestDatabase, type TestDatabase } from './support/database.js';

/** Issue 22, finding 6: an embedded first start in production prints no key. */
let database: TestDatabase;
beforeAll(async () => {
  database = await openTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

test('NODE_ENV=production: no demo account, no key; how to create one instead. Otherwise the demo account and its key, once', async () => {
  const printed: string[] = [];
  const write = (text: string) => printed.push(text);
  expect(await greetFirstStart(database, { production: true, publicApiUrl: 'https://api.example.com', write })).toBe('instructions');
  expect(printed.join('')).toContain('accessctl bootstrap');
  expect(printed.join('')).not.toMatch(/API key \(shown only now\)|Token token=/);
  expect(await new AccountsService(database.em()).countAccounts()).toBe(0);

  printed.length = 0;
  expect(await greetFirstStart(database, { production: false, publicApiUrl: 'http://localhost:4000', write })).toBe('demo_account');
  expect(printed.join('')).toMatch(/Full-access API key \(shown only now\): \S+/);
  expect(await greetFirstStart(database, { production: false, publicApiUrl: 'http://localhost:4000', write })).toBe('not_first');
});
