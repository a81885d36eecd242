// ESM + SWC: legacy decorators with metadata are what type-graphql and MikroORM's
// ReflectMetadataProvider read at run time.
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  roots: ['<rootDir>/src', '<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // The browser journey runs on its own (jest.browser.config.js, `npm run test:browser`).
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/browser/'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: {
          target: 'es2023',
          parser: { syntax: 'typescript', decorators: true },
          transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
        },
        module: { type: 'es6' },
        sourceMaps: 'inline',
      },
    ],
  },
  // Without DATABASE_URL: one PostgreSQL server from node_modules for the whole run (test/support/global-setup.ts).
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 30000,
  maxWorkers: 2,
};
