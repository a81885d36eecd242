// Lets a child process run the TypeScript sources directly (`node --import ./test/support/ts-loader.mjs
// src/cli/accessctl.ts`), compiled by SWC with the same decorator settings as the Jest transform, so
// tests can start the real CLI without a build.
import { register } from 'node:module';

register('./ts-loader-hooks.mjs', import.meta.url);
