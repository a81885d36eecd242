import 'reflect-metadata';
import { unstorableStrings } from './params.js';

// How refused strings of a REST request are named (the walk names a value only once it is refused).
test('unstorable strings are named the REST way, wherever they sit in the request', () => {
  const body = {
    users: [
      { id: 'P000001', job_title: 'fine' },
      { id: 'P000002', job_title: 'bad\u0000', tags: ['ok', 'x\ud800'] },
    ],
    'we"ird key': { inner: '\udc00' },
    ['bad\u0000key']: 'never looked at',
  };
  expect(unstorableStrings({ params: { id: 'P\u0000' }, query: { 'q\u0001': 'a\u0000' }, body }).sort()).toEqual([
    'path parameter id contains a NUL character (U+0000)',
    'q\ufffd contains a NUL character (U+0000)',
    'the field name "bad\ufffdkey" contains a NUL character (U+0000)',
    'users[1].job_title contains a NUL character (U+0000)',
    'users[1].tags[1] contains an unpaired UTF-16 surrogate',
    'we\\"ird key.inner contains an unpaired UTF-16 surrogate',
  ]);
  expect(unstorableStrings({ params: {}, query: {}, body: ['ok', ['\u0000']] })).toEqual(['[1][0] contains a NUL character (U+0000)']);
  expect(unstorableStrings({ params: {}, query: {}, body: '\u0000' })).toEqual(['the request body contains a NUL character (U+0000)']);
});

test('a deeply nested body is walked without recursion and named in full; at most 10 problems', () => {
  let deep: unknown = '\u0000';
  for (let i = 0; i < 10_000; i++) deep = { a: deep };
  const [problem] = unstorableStrings({ params: {}, query: {}, body: deep });
  expect(problem).toBe(`${Array.from({ length: 10_000 }, () => 'a').join('.')} contains a NUL character (U+0000)`);
  expect(unstorableStrings({ params: {}, query: {}, body: Array.from({ length: 50 }, () => '\u0000') })).toHaveLength(10);
});
