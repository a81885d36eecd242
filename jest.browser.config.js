import base from './jest.config.js';

// The settings app in headless Chromium (test/browser): its own run, `npm run test:browser`, so `npm test` stays fast.
export default {
  ...base,
  roots: ['<rootDir>/test'],
  testMatch: ['<rootDir>/test/browser/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  maxWorkers: 1,
};
