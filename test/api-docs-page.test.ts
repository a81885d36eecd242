import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import supertest from 'supertest';
import { chromium } from 'playwright-core';
import { startHarness, type Harness } from './support/harness.js';

/**
 * The /docs page in a real headless browser (Debian's chromium), offline: every request the page
 * makes must go to this server. Without a browser the browser test is skipped, saying why
 * (.ci/run installs chromium, so CI always runs it).
 */
const BROWSER = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const browserInstalled = fs.existsSync(BROWSER);
if (!browserInstalled) {
  process.stdout.write(`\n[api-docs-page.test] SKIPPING the browser check: no chromium at ${BROWSER} (apt-get install chromium, or set CHROMIUM_PATH)\n\n`);
}
const SCREENSHOT = path.resolve(process.env.API_DOCS_SCREENSHOT ?? path.join(os.tmpdir(), 'api-docs-page.png'));

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ settings: { apiDocsPage: true } });
});
afterAll(async () => {
  await h?.close();
});

test('GET /docs is an HTML page whose every asset is local, with a policy that forbids any other origin', async () => {
  const page = await supertest(h.app).get('/docs');
  expect(page.status).toBe(200);
  expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
  const references = [...page.text.matchAll(/\b(?:src|href)="([^"]*)"/g)].map((match) => match[1]!);
  expect(references.length).toBeGreaterThanOrEqual(4);
  for (const reference of references) expect({ reference, local: reference.startsWith('/') && !reference.startsWith('//') }).toEqual({ reference, local: true });
  expect(page.text).not.toMatch(/https?:\/\//);
  expect(page.headers['content-security-policy']).toContain("default-src 'none'");
  expect(page.headers['content-security-policy']).toContain("script-src 'self'");
  for (const reference of references.filter((entry) => entry.startsWith('/docs/'))) {
    expect([reference, (await supertest(h.app).get(reference)).status]).toEqual([reference, 200]);
  }
  expect((await supertest(h.app).get('/docs/assets/index.html')).status).toBe(404);
});

(browserInstalled ? test : test.skip)('headless chromium renders every operation from /openapi.json, requesting nothing from elsewhere', async () => {
  const server = http.createServer(h.app as http.RequestListener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'api-docs-chromium-'));
  // A fresh profile directory: nothing from an earlier run (cache, service workers) can stand in for the server.
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: BROWSER,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 1600 },
  });
  try {
    const page = await browser.newPage();
    const requested: string[] = [];
    const problems: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    // Anything not on this server is refused outright, so an attempt shows up and the page cannot lean on it.
    await page.route('**/*', (route) => (route.request().url().startsWith(origin) || route.request().url().startsWith('data:') ? route.continue() : route.abort()));

    const response = await page.goto(`${origin}/docs`, { waitUntil: 'networkidle' });
    expect(response?.status()).toBe(200);
    await page.waitForSelector('.opblock', { timeout: 20_000 });
    const document = (await supertest(h.app).get('/openapi.json')).body;
    const operationIds = Object.values(document.paths as Record<string, Record<string, { operationId?: string }>>)
      .flatMap((item) => Object.values(item))
      .map((operation) => operation.operationId)
      .filter(Boolean);
    // Swagger UI renders an operation once per tag, with the id operations-<tag>-<operationId>.
    const rendered = (selector: string) => page.locator(selector).evaluateAll((blocks) => blocks.map((block) => block.id.split('-').pop()));
    expect([...new Set(await rendered('.opblock'))].sort()).toEqual([...operationIds].sort());
    expect([...new Set(await rendered('.opblock.opblock-deprecated'))]).toEqual(['getOauthDelegationsRevocationRequestsStatus']);
    await expect(page.locator('.info .title').innerText()).resolves.toContain('Account access REST API');
    await page.screenshot({ path: SCREENSHOT, fullPage: false });
    process.stdout.write(`\n[api-docs-page.test] screenshot of /docs: ${SCREENSHOT}\n`);

    expect(requested.filter((url) => !url.startsWith(origin) && !url.startsWith('data:'))).toEqual([]);
    expect(requested).toContain(`${origin}/openapi.json`);
    expect(problems).toEqual([]);
  } finally {
    await browser.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    fs.rmSync(profile, { recursive: true, force: true });
  }
}, 90_000);
