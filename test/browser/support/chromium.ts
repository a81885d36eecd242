import fs from 'node:fs';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Whether the browser tests can run here. In CI a missing browser is a failure, not a skip: the
 * journey is what proves the client contract.
 */
export function chromiumAvailable(testFile: string): boolean {
  if (fs.existsSync(CHROMIUM)) return true;
  if (process.env.CI === 'true') throw new Error(`${testFile}: no chromium at ${CHROMIUM}; CI must run the browser test (apt-get install chromium)`);
  process.stdout.write(`\n[${testFile}] SKIPPING: no chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)\n\n`);
  return false;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  });
}

/** A fresh browser profile that may reach this machine only: any other host is refused and remembered in `refused`. */
export async function localOnlyContext(browser: Browser, refused: string[]): Promise<BrowserContext> {
  const context = await browser.newContext();
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.protocol === 'data:' || ['127.0.0.1', 'localhost'].includes(url.hostname)) return route.continue();
    refused.push(url.href);
    return route.abort('blockedbyclient');
  });
  return context;
}
