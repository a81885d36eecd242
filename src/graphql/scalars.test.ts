import { URLResolver } from 'graphql-scalars';
import { MAX_REMEMBERED_TIME_ZONES, rememberedTimeZoneCount, TimeZoneScalar, URLScalar } from './scalars.js';

// Each value twice: the first pass may remember its origin, the second then takes the shortcut.
const values = [
  'http://bench.example/users/PABC123',
  'https://api.example.com/users/PABC123',
  'https://app.example.com/assets/blank-avatar.png',
  'https://app.example.com/assets/../secret',
  'https://app.example.com/assets/./x',
  'https://app.example.com/a/.hidden',
  'https://app.example.com/a b',
  'https://app.example.com/caf\u00e9',
  'https://app.example.com/a%2e%2e/b',
  'https://app.example.com/users/P1?x=1',
  'https://app.example.com/users/P1#top',
  'https://app.example.com/users//P1',
  'https://app.example.com/',
  'https://app.example.com',
  'HTTPS://APP.EXAMPLE.COM/users/P1',
  'https://App.Example.com/users/P1',
  'https://app.example.com:443/users/P1',
  'https://user:pass@app.example.com/users/P1',
  'http://[::1]:8080/users/P1',
  'webcal://feed.example.com/calendar/abc.ics',
  'https://app.example.com\\users/P1',
  'http://a.example?b/users/P1',
  'file:///users/P1',
];

test.each(values)('URL serializes %s exactly as graphql-scalars does, remembered or not', (value) => {
  const expected = URLResolver.serialize(value);
  expect(URLScalar.serialize(value)).toBe(expected);
  expect(URLScalar.serialize(value)).toBe(expected);
});

test('URL still refuses what is not a URL, and accepts URL objects', () => {
  expect(() => URLScalar.serialize('not a url/users/P1')).toThrow();
  expect(() => URLScalar.serialize('https://exa mple.com/users/P1')).toThrow();
  expect(URLScalar.serialize(new URL('https://app.example.com/x'))).toBe('https://app.example.com/x');
  expect(URLScalar.serialize(null)).toBeNull();
});

test('URL input parsing is graphql-scalars\' own', () => {
  expect(URLScalar.parseValue('https://app.example.com/x')).toEqual(new URL('https://app.example.com/x'));
  expect(() => URLScalar.parseValue('nope')).toThrow();
});

/** `count` distinct capitalizations of `name`, each a valid time zone name for Intl. */
function capitalizations(name: string, count: number): string[] {
  const letters = [...name].map((char, index) => (/[a-z]/i.test(char) ? index : -1)).filter((index) => index >= 0);
  return Array.from({ length: count }, (_, n) => [...name].map((char, index) => {
    const bit = letters.indexOf(index);
    return bit >= 0 && (n >> bit) & 1 ? char.toUpperCase() : char.toLowerCase();
  }).join(''));
}

test('TimeZone remembers a bounded number of names, however many spellings clients send, and still checks the rest', () => {
  const spellings = capitalizations('America/Argentina/ComodRivadavia', MAX_REMEMBERED_TIME_ZONES + 500);
  for (const spelling of spellings) {
    expect(TimeZoneScalar.parseValue(spelling)).toBe(spelling);
    expect(TimeZoneScalar.serialize(spelling)).toBe(spelling);
  }
  expect(rememberedTimeZoneCount()).toBeLessThanOrEqual(2 * MAX_REMEMBERED_TIME_ZONES);
  expect(() => TimeZoneScalar.parseValue('America/Nowhere')).toThrow('Value is not a valid IANA time zone');
  expect(() => TimeZoneScalar.serialize('America/Nowhere')).toThrow('Value is not a valid IANA time zone');
});
