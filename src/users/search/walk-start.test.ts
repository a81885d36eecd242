import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { startHarness, type Harness } from '../../../test/support/harness.js';

/** Where the walk of a search page resumes after a name prefix without a match (user_search_after_prefix, in the migrations). */
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

test('where a name prefix\'s stretch ends: after a short name, at a six-character prefix, past U+D7FF and past U+10FFFF', async () => {
  const cases: [string, string | null][] = [
    ['Ann', 'Ann\u0001'],
    ['Ada Lo', 'Ada Lp'],
    ['abcde\u{D7FF}', 'abcde\u{E000}'],
    [`Y${'\u{10FFFF}'.repeat(5)}`, 'Z'],
    [`Ya${'\u{10FFFF}'.repeat(4)}`, 'Yb'],
    ['\u{10FFFF}'.repeat(6), null],
  ];
  for (const [prefix, end] of cases) {
    const [row] = await h.database.em().execute<{ end: string | null }[]>('select user_search_after_prefix(?) as "end"', [prefix]);
    expect({ prefix, end: row!.end }).toEqual({ prefix, end });
  }
});
