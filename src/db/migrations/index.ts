import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261122000100_foundation } from './Migration20261122000100_foundation.js';
import { Migration20261122000400_calendar_feed } from './Migration20261122000400_calendar_feed.js';

/** Applied in this order by the server at start and by `accessctl migrate`; same list for PGlite and PostgreSQL. */
export const migrationsList: MigrationObject[] = [
  { name: 'Migration20261122000100_foundation', class: Migration20261122000100_foundation },
  { name: 'Migration20261122000400_calendar_feed', class: Migration20261122000400_calendar_feed },
];
