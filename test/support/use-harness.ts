import { afterAll, beforeAll } from '@jest/globals';
import { startHarness, type Harness, type HarnessOptions } from './harness.js';

/**
 * One harness for the tests of the file (or of the describe block it is called in): started with
 * `options` before them and handed to `started` (awaited, for set-up of the caller's own), closed
 * after them.
 */
export function useHarness(options: HarnessOptions, started: (harness: Harness) => void | Promise<void>, timeoutMs?: number): void {
  let harness: Harness | undefined;
  beforeAll(async () => {
    harness = await startHarness(options);
    await started(harness);
  }, timeoutMs);
  afterAll(async () => {
    await harness?.close();
  });
}
