// MikroORM CLI entry point: same configuration as the server (DATABASE_URL, else embedded PGlite in DATA_DIR).
// The application itself opens the database through src/db/database.ts.
import 'reflect-metadata';
import { defineConfig } from '@mikro-orm/core';
import { ReflectMetadataProvider } from '@mikro-orm/decorators/legacy';
import { Migrator } from '@mikro-orm/migrations';
import { PostgreSqlDriver } from '@mikro-orm/postgresql';
import { PgliteDriver } from '@mikro-orm/pglite';
import path from 'node:path';
import { loadConfig } from './src/config/config.js';
import { allEntities } from './src/app/features.js';
import { migrationsList } from './src/db/migrations/index.js';

const config = loadConfig();

export default defineConfig({
  entities: allEntities(),
  metadataProvider: ReflectMetadataProvider,
  extensions: [Migrator],
  migrations: { migrationsList, transactional: true, allOrNothing: true, snapshot: false },
  ...(config.databaseUrl
    ? { driver: PostgreSqlDriver, clientUrl: config.databaseUrl }
    : { driver: PgliteDriver, dbName: path.join(config.dataDir, 'pgdata') }),
} as Parameters<typeof defineConfig>[0]);
