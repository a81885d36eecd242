import { isIanaTimeZone, knownTimeZoneCount, MAX_KNOWN_TIME_ZONES } from './user.validation.js';

// Every capitalization of a name is valid for Intl: each of these is a distinct valid name (bit i of n upper-cases the i-th letter).
const letters = 'EuropeIsleofMan';
const spellings = Array.from({ length: MAX_KNOWN_TIME_ZONES + 500 }, (_, n) => {
  const cased = [...letters].map((char, index) => ((n >> index) & 1 ? char.toUpperCase() : char.toLowerCase()));
  return `${cased.slice(0, 6).join('')}/${cased.slice(6, 10).join('')}_${cased.slice(10, 12).join('')}_${cased.slice(12).join('')}`;
});

test('user validation remembers a bounded number of time zone names and still checks the rest', () => {
  for (const spelling of spellings) expect(isIanaTimeZone(spelling)).toBe(true);
  expect(knownTimeZoneCount()).toBeLessThanOrEqual(MAX_KNOWN_TIME_ZONES);
  expect(isIanaTimeZone('Europe/Nowhere')).toBe(false);
  expect(isIanaTimeZone('europe/isle_of_man')).toBe(true);
});
