import { expect } from '@jest/globals';
import type { Page } from 'playwright-core';
import type { Database } from '../../../src/db/database.js';
import { Account } from '../../../src/accounts/account.entity.js';
import { User } from '../../../src/users/user.entity.js';

/** People of the account besides its owner and the signed-in admin: more than one page of the users list. */
export const COLLEAGUES = [
  'Ada Lovelace', 'Grace Hopper', 'Alan Turing', 'Barbara Liskov', 'Edsger Dijkstra', 'Frances Allen',
  'Donald Knuth', 'Margaret Hamilton', 'Ken Thompson', 'Radia Perlman', 'John Backus', 'Leslie Lamport',
];

export async function addColleagues(database: Database, accountId: string, suffix: string): Promise<void> {
  const em = database.em();
  for (const name of COLLEAGUES) {
    const email = `${name.toLowerCase().replace(/\W+/g, '.')}-${suffix}@example.com`;
    em.create(User, { account: em.getReference(Account, accountId), name, email, timeZone: 'Etc/UTC', color: 'blue', role: 'user' });
  }
  await em.flush();
}

/** The server's own sign-in page (on the API's origin): the password form, as a person fills it. */
export async function submitPasswordForm(page: Page, apiUrl: string, email: string, password: string): Promise<void> {
  await page.waitForURL((url) => url.href.startsWith(`${apiUrl}/oauth/`));
  await expect(page.locator('input[name="password"]').isVisible()).resolves.toBe(true);
  await page.locator('input[name="email"]').fill(email);
  await page.locator('input[name="password"]').fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
}

/** Opens the app signed out, signs in through the server's page, and waits for the app to say who is signed in. */
export async function signInThroughApp(page: Page, appOrigin: string, apiUrl: string, person: { email: string; password: string; name: string }): Promise<void> {
  await page.goto(`${appOrigin}/users`);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await submitPasswordForm(page, apiUrl, person.email, person.password);
  await page.getByTestId('viewer').filter({ hasText: `Signed in as ${person.name}` }).waitFor();
  expect(new URL(page.url()).origin).toBe(appOrigin);
}

/** Counts the GraphQL operations the page sends over HTTP, by operation name. */
export function countOperations(page: Page): Map<string, number> {
  const sent = new Map<string, number>();
  page.on('request', (request) => {
    if (!request.url().endsWith('/graphql') || request.method() !== 'POST') return;
    const name = (request.postDataJSON() as { operationName?: string } | null)?.operationName ?? '';
    sent.set(name, (sent.get(name) ?? 0) + 1);
  });
  return sent;
}

/** The text of every WebSocket frame the page receives (graphql-ws messages). */
export function receivedFrames(page: Page): string[] {
  const frames: string[] = [];
  page.on('websocket', (socket) => socket.on('framereceived', (frame) => frames.push(String(frame.payload))));
  return frames;
}
