// For MikroORM's own tooling: the same configuration the server builds (DATABASE_URL, else embedded
// PGlite with pg_trgm in DATA_DIR, under the same single-process lock). The application opens the
// database through src/db/database.ts, which uses the same builders.
import 'reflect-metadata';
import { defineConfig } from '@mikro-orm/core';
import { loadConfig } from './src/config/config.js';
import { allEntities } from './src/app/features.js';
import { baseOrmOptions, openEmbedded, postgresOrmOptions } from './src/db/database.js';

export default async () => {
  const config = loadConfig();
  const base = baseOrmOptions(allEntities());
  const connection = config.databaseUrl ? postgresOrmOptions(config.databaseUrl, { replicaUrls: config.databaseReplicaUrls }) : (await openEmbedded(config.dataDir)).options;
  return defineConfig({ ...base, ...connection } as Parameters<typeof defineConfig>[0]);
};
