import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import type { Browser, BrowserContext, Page, Response } from 'playwright-core';
import type { Database } from '../../src/db/database.js';
import { openTestDatabase } from '../support/database.js';
import { User } from '../../src/users/user.entity.js';
import { graphqlCall, newMember, PASSWORD, registerApp, startInstances, type Instance, type Member } from '../support/oauth-server.js';
import { chromiumAvailable, launchChromium, localOnlyContext } from './support/chromium.js';
import { countOperations, addColleagues, receivedFrames, signInThroughApp, submitPasswordForm } from './support/journey.js';
import { SCOPE } from '../../examples/settings-app/src/auth/scope.js';
import { buildSettingsApp, serveSettingsApp, type SettingsAppServer } from './support/settings-app-server.js';

/**
 * examples/settings-app in headless Chromium, as its users drive it: served from another origin than
 * the API, signed in with a `spa` app (code + PKCE), against the real server and database. Each step
 * asserts what the page shows. Managing keys needs a sign-in younger than STEP_UP_MAX_AGE (short here,
 * so the journey's first sign-in is stale by the time it reaches the keys).
 */
const STEP_UP_MAX_AGE = 12;
const runs = chromiumAvailable('settings-journey.test');

let database: Database;
let api: Instance;
let stopApi: () => Promise<void>;
let builtApp: string;
let appServer: SettingsAppServer;
let browser: Browser;
let admin: Member & { name: string; password: string };
let laptop: BrowserContext;
let page: Page;
let signedInAt = 0;
const refused: string[] = [];
const pageErrors: string[] = [];
let frames: string[] = [];

beforeAll(async () => {
  if (!runs) return;
  builtApp = await buildSettingsApp();
  appServer = await serveSettingsApp(builtApp);
  database = await openTestDatabase();
  const started = await startInstances(database, 1, [], { corsOrigins: [appServer.origin], stepUpMaxAgeSeconds: STEP_UP_MAX_AGE });
  api = started.instances[0]!;
  stopApi = started.stop;
  const member = await newMember(database, 'admin');
  admin = { ...member, name: (await database.em().findOneOrFail(User, member.userId)).name, password: PASSWORD };
  await addColleagues(database, member.accountId, randomUUID().slice(0, 8));
  // The operator's code path: a consent-less browser app is registered only with owner rights.
  const { app } = await registerApp(database, started.serverSecret, { accountId: member.accountId, kind: 'spa', redirectUris: [`${appServer.origin}/callback`], scopes: SCOPE, name: 'Settings' });
  appServer.configure({ apiUrl: api.url, clientId: app.clientId });
  browser = await launchChromium();
  laptop = await localOnlyContext(browser, refused);
  page = await laptop.newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
  frames = receivedFrames(page);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await appServer?.close();
  await stopApi?.();
  await database?.close();
  if (builtApp) fs.rmSync(builtApp, { recursive: true, force: true });
});

const journey = runs ? describe : describe.skip;

journey('the settings app in a real browser: sign-in, users and forms', () => {
  test('signs in with the spa app from another origin: the server\'s password page, then back in the app', async () => {
    expect(new URL(appServer.origin).port).not.toBe(new URL(api.url).port);
    await signInThroughApp(page, appServer.origin, api.url, admin);
    signedInAt = Date.now();
  }, 30_000);

  test('lists users a page at a time and searches them', async () => {
    const rows = page.getByRole('table', { name: 'Users' }).locator('tbody tr');
    await rows.first().waitFor();
    expect(await rows.count()).toBe(10);
    await page.getByRole('button', { name: 'Load more' }).click();
    await page.waitForFunction(() => document.querySelectorAll('table[aria-label="Users"] tbody tr').length === 14);
    await expect(page.getByRole('button', { name: 'Load more' }).count()).resolves.toBe(0);

    await page.getByLabel('Search users').fill('lovelace');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForFunction(() => document.querySelectorAll('table[aria-label="Users"] tbody tr').length === 1);
    await expect(rows.first().innerText()).resolves.toContain('Ada Lovelace');
  }, 30_000);

  test('an edit with three bad fields of three kinds shows each problem next to its input, from one answer', async () => {
    const sent = countOperations(page);
    await page.getByRole('table', { name: 'Users' }).getByRole('button', { name: 'Edit' }).click();
    const form = page.getByRole('form', { name: 'Edit Ada Lovelace' });
    // An empty name (the service's rule), an email the scalar refuses, a job title past its bound.
    await form.getByLabel('Name').fill(' ');
    await form.getByLabel('Email').fill('ada-at-example');
    await form.getByLabel('Job title').fill('J'.repeat(101));
    await form.getByRole('button', { name: 'Save' }).click();
    await form.locator('.field-error').nth(2).waitFor();
    const shown = await form.locator('.field-error').evaluateAll((nodes) => nodes.map((node) => [(node as HTMLElement).dataset.field, node.textContent]));
    expect(shown).toEqual([
      ['name', expect.stringContaining('must not be empty')],
      ['email', expect.stringContaining('email')],
      ['jobTitle', expect.stringContaining('at most 100 characters')],
    ]);
    for (const input of ['name', 'email', 'jobTitle']) await expect(form.locator(`input[name="${input}"]`).getAttribute('aria-invalid')).resolves.toBe('true');
    await expect(form.locator('input[name="description"]').getAttribute('aria-invalid')).resolves.toBe('false');
    expect(sent.get('UpdateUser')).toBe(1);
    await form.getByRole('button', { name: 'Cancel' }).click();
  }, 30_000);
});

journey('the settings app in a real browser: sessions, keys with step-up, the live trail', () => {
  test('the sessions page marks this device, and ending the other session updates the list from the answer', async () => {
    const phone = await localOnlyContext(browser, refused);
    try {
      await signInThroughApp(await phone.newPage(), appServer.origin, api.url, admin);
      await endTheOtherSession(page);
      // The phone's browser session is over: a new tab there gets the password page, not a silent sign-in.
      await signInThroughApp(await phone.newPage(), appServer.origin, api.url, admin);
    } finally {
      await phone.close();
    }
  }, 60_000);

  test('API keys: a stale sign-in gets the step-up prompt, the password again, then create, roll and revoke', async () => {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, signedInAt + (STEP_UP_MAX_AGE + 1) * 1000 - Date.now())));
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByLabel('Description').fill('Deploy bot');
    const challenged = page.waitForResponse((response) => response.url() === `${api.url}/graphql` && response.status() === 401);
    await page.getByRole('button', { name: 'Create key' }).click();
    const challenge = await challenged;
    expect(await challenge.headerValue('www-authenticate')).toContain(`error="insufficient_user_authentication"`);
    expect((await challenge.json()).errors[0].extensions).toMatchObject({ code: 'INSUFFICIENT_USER_AUTHENTICATION', maxAge: STEP_UP_MAX_AGE });
    const prompt = page.getByRole('dialog', { name: "Confirm it's you" });
    await expect(prompt.innerText()).resolves.toContain(`last ${STEP_UP_MAX_AGE} seconds`);
    await expect(page.locator('[data-key-id]').count()).resolves.toBe(0);

    await prompt.getByRole('button', { name: "Confirm it's you" }).click();
    await submitPasswordForm(page, api.url, admin.email, admin.password);
    await page.getByRole('status').filter({ hasText: 'Sign-in confirmed' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/api-keys');
    await manageKeyOnThePage(page);
  }, 60_000);

  test('audit records arrive live over the WebSocket on the audit page', async () => {
    await page.getByRole('link', { name: 'Audit' }).click();
    // The key revoked above, pushed to the app while the keys page was open.
    await page.locator('ul[aria-label="Audit records"] li[data-action="REVOKE"][data-resource-type="api_key_reference"]').filter({ hasText: 'Deploy bot' }).waitFor();

    // A change made elsewhere while the audit page is open appears on it without a reload.
    const owner = `Token token=${admin.ownerKey}`;
    const found = await graphqlCall(api, owner, 'query { users(query: "hopper", first: 1) { nodes { id } } }');
    const renamed = await graphqlCall(api, owner, 'mutation($input: UpdateUserInput!) { updateUser(input: $input) { user { id } } }', { input: { id: found.data.users.nodes[0].id, name: 'Grace Brewster Hopper' } });
    expect(renamed.errors).toBeUndefined();
    await page.locator('ul[aria-label="Audit records"] li[data-action="UPDATE"][data-resource-type="user_reference"]').filter({ hasText: 'Grace Brewster Hopper' }).waitFor();
    expect(frames.some((frame) => frame.includes('"auditRecordAdded"') && frame.includes('Grace Brewster Hopper'))).toBe(true);
  }, 30_000);

  test('an access token that stopped working is refreshed once and the request retried, unseen by the user', async () => {
    // As if its 10 minutes had passed: the server no longer accepts the tab's access token.
    await database.em().getConnection().execute("update oauth_server_records set expires_at = now() - interval '1 minute' where model = 'AccessToken'");
    const statuses: number[] = [];
    const onResponse = (response: Response) => {
      if (response.url() === `${api.url}/graphql`) statuses.push(response.status());
    };
    page.on('response', onResponse);
    const refreshes: string[] = [];
    page.on('request', (request) => {
      if (request.url() === `${api.url}/oauth/token` && request.postData()?.includes('grant_type=refresh_token')) refreshes.push(request.url());
    });
    // The users page opens with its list, not in this tab's cache since the step-up reloaded the app: one query.
    await page.getByRole('link', { name: 'Users' }).click();
    await page.waitForFunction(() => document.querySelectorAll('table[aria-label="Users"] tbody tr').length === 10);
    page.off('response', onResponse);
    expect(statuses).toEqual([401, 200]);
    expect(refreshes).toHaveLength(1);
    expect(new URL(page.url()).origin).toBe(appServer.origin);
  }, 30_000);

  test('nothing was requested from another host, and the page raised no error', () => {
    expect(refused).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});

/** Create, roll and revoke one key, each seen on the page; a secret is shown once and differs after the roll. */
async function manageKeyOnThePage(page: Page): Promise<void> {
  await page.getByLabel('Description').fill('Deploy bot');
  await page.getByRole('button', { name: 'Create key' }).click();
  const secret = page.getByTestId('secret');
  await secret.waitFor();
  const first = await secret.innerText();
  const keys = page.locator('tr[data-key-id]');
  await page.locator('tr[data-status="ACTIVE"]').filter({ hasText: 'Deploy bot' }).waitFor();
  await expect(keys.count()).resolves.toBe(1);

  await page.locator('tr[data-status="ACTIVE"]').getByRole('button', { name: 'Roll' }).click();
  await page.waitForFunction(() => document.querySelectorAll('tr[data-key-id]').length === 2);
  await expect(secret.innerText()).resolves.not.toBe(first);
  await expect(page.locator('tr[data-status="ACTIVE"]').count()).resolves.toBe(1);

  await page.locator('tr[data-status="ACTIVE"]').getByRole('button', { name: 'Revoke' }).click();
  await page.locator('tr[data-status="REVOKED"]').waitFor();
  await expect(page.locator('tr[data-status="ACTIVE"]').count()).resolves.toBe(0);
}

/** On the sessions page: two sessions, this device marked; ending the other one updates the list from the answer alone. */
async function endTheOtherSession(page: Page): Promise<void> {
  const sent = countOperations(page);
  await page.getByRole('link', { name: 'Sessions' }).click();
  const sessions = page.getByRole('list', { name: 'Sign-in sessions' }).locator('li');
  await page.waitForFunction(() => document.querySelectorAll('ul[aria-label="Sign-in sessions"] li').length === 2);
  await expect(sessions.filter({ hasText: 'This device' }).count()).resolves.toBe(1);
  const other = sessions.filter({ hasText: 'Another device' });
  await expect(other.count()).resolves.toBe(1);
  const listed = sent.get('Sessions');

  await other.getByRole('button', { name: 'End session' }).click();
  await page.waitForFunction(() => document.querySelectorAll('ul[aria-label="Sign-in sessions"] li').length === 1);
  await expect(sessions.first().innerText()).resolves.toContain('This device');
  expect(sent.get('RevokeSignInSessions')).toBe(1);
  expect(sent.get('Sessions')).toBe(listed);
}
