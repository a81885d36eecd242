import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import supertest from 'supertest';
import { chromium, type Page } from 'playwright-core';
import { startHarness, type Harness } from './support/harness.js';

/**
 * The explorer at `GET /graphql` (landing page on) works offline: the page and every file it loads
 * come from this server, and in a real headless browser that may reach nothing else it runs a query
 * with a key from its headers editor and follows a subscription over the WebSocket.
 */
const BROWSER = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const browserInstalled = fs.existsSync(BROWSER);
if (!browserInstalled && process.env.CI !== 'true') {
  process.stdout.write(`\n[graphql-explorer.test] SKIPPING the browser check: no chromium at ${BROWSER} (apt-get install chromium, or set CHROMIUM_PATH)\n\n`);
}
const LIVE = { maxConnectionsPerCredential: 5, maxSubscriptionsPerConnection: 10, maxBufferedBytes: 1_000_000, keepAliveMs: 60_000 };

let h: Harness;
let origin: string;
beforeAll(async () => {
  h = await startHarness({ liveUpdates: LIVE, settings: { landingPage: true } });
  await new Promise<void>((resolve) => h.httpServer.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(h.httpServer.address() as AddressInfo).port}`;
});
afterAll(async () => h?.close());

test('a browser\'s GET /graphql is the explorer page, whose every file is this server\'s, under a policy that forbids any other origin', async () => {
  const page = await supertest(h.app).get('/graphql').set('Accept', 'text/html');
  expect(page.status).toBe(200);
  expect(page.headers['content-security-policy']).toContain("default-src 'none'");
  expect(page.headers['content-security-policy']).toContain("script-src 'self'");
  expect(page.text).not.toMatch(/https?:\/\//);
  const references = [...page.text.matchAll(/\b(?:src|href)="([^"]*)"/g)].map((match) => match[1]!);
  expect(references).toHaveLength(6);
  for (const reference of references) {
    expect(reference.startsWith('/graphql/explorer/')).toBe(true);
    const asset = await supertest(h.app).get(reference);
    expect([reference, asset.status]).toEqual([reference, 200]);
    // Fonts and images are inlined in the stylesheet: nothing in it points elsewhere.
    if (reference.endsWith('.css')) expect(asset.text).not.toMatch(/url\((?!data:)/);
  }
  // A script still gets the API: an operation without a credential is a 401, not the page.
  expect((await supertest(h.app).get('/graphql?query=%7B__typename%7D')).status).toBe(401);
  // Only the explorer's own files are served, nothing else of the packages they come from.
  expect((await supertest(h.app).get('/graphql/explorer/package.json')).status).not.toBe(200);
});

async function setEditor(page: Page, selector: string, text: string): Promise<void> {
  await page.locator(`${selector} .CodeMirror`).first().waitFor();
  await page.evaluate(([where, value]) => {
    const editor = document.querySelector(`${where} .CodeMirror`) as unknown as { CodeMirror: { setValue(value: string): void } };
    editor.CodeMirror.setValue(value);
  }, [selector, text] as const);
}

const response = (page: Page) => page.evaluate(() => (document.querySelector('.graphiql-response .CodeMirror') as unknown as { CodeMirror: { getValue(): string } }).CodeMirror.getValue());

(browserInstalled || process.env.CI === 'true' ? test : test.skip)('headless chromium, offline: a query with a key from the headers editor, then a subscription\'s events', async () => {
  const account = await h.createAccount();
  const user = await h.createUser(account, { name: 'Explorer Subject' });
  const token = (account.key as { token: string }).token;
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'graphql-explorer-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: BROWSER,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic'],
  });
  try {
    const page = await browser.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    const elsewhere: string[] = [];
    await page.route('**/*', (route) => {
      const url = new URL(route.request().url());
      if (url.origin === origin || url.protocol === 'data:') return route.continue();
      elsewhere.push(url.href);
      return route.abort();
    });
    await page.goto(`${origin}/graphql`);
    await page.getByRole('button', { name: /Headers/ }).click();
    // The key pasted into the headers is what the schema is introspected with.
    const introspected = page.waitForResponse(async (answer) => answer.url().endsWith('/graphql') && (answer.request().postData() ?? '').includes('__schema') && answer.status() === 200);
    await setEditor(page, '.graphiql-editor-tool .graphiql-editor:not(.hidden)', JSON.stringify({ Authorization: `Token token=${token}` }));
    expect(JSON.parse(await (await introspected).text()).data.__schema.queryType.name).toBe('Query');
    await page.getByRole('button', { name: /Documentation Explorer/ }).click();
    await page.locator('.graphiql-doc-explorer').getByText('Query', { exact: true }).first().waitFor();
    await setEditor(page, '.graphiql-query-editor', `{ user(id: "${user.id}") { name } }`);
    await page.locator('.graphiql-execute-button').click();
    await page.waitForFunction(() => ((document.querySelector('.graphiql-response .CodeMirror') as unknown as { CodeMirror?: { getValue(): string } })?.CodeMirror?.getValue() ?? '').includes('Explorer Subject'));

    await setEditor(page, '.graphiql-query-editor', `subscription { userChanged(id: "${user.id}") { kind user { name } } }`);
    await page.locator('.graphiql-execute-button').click();
    // The subscription is open once the socket is: then a change shows up as an event.
    await page.waitForTimeout(500);
    const renamed = await h.graphql('mutation($input: UpdateUserInput!) { updateUser(input: $input) { user { id } } }', { input: { id: user.id, name: 'Renamed Live' } }, account.key);
    expect(renamed.errors).toBeUndefined();
    await page.waitForFunction(() => ((document.querySelector('.graphiql-response .CodeMirror') as unknown as { CodeMirror?: { getValue(): string } })?.CodeMirror?.getValue() ?? '').includes('Renamed Live'), undefined, { timeout: 10_000 });
    expect(await response(page)).toContain('UPDATED');
    expect(elsewhere).toEqual([]);
    expect(pageErrors).toEqual([]);
  } finally {
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}, 60_000);
