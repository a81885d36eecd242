import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261122000100_foundation } from './Migration20261122000100_foundation.js';
import { Migration20261122000300_oauth_delegations } from './Migration20261122000300_oauth_delegations.js';
import { Migration20261122000400_calendar_feed } from './Migration20261122000400_calendar_feed.js';
import { Migration20261122000500_notification_subscriptions } from './Migration20261122000500_notification_subscriptions.js';
import { Migration20261122001000_search_strategies } from './Migration20261122001000_search_strategies.js';
import { Migration20261122001200_oauth_server } from './Migration20261122001200_oauth_server.js';
import { Migration20261122001300_idempotency_keys } from './Migration20261122001300_idempotency_keys.js';
import { Migration20261122001400_search_walk } from './Migration20261122001400_search_walk.js';
import { Migration20261123000100_security_fixes } from './Migration20261123000100_security_fixes.js';
import { Migration20261123000200_audit_trail } from './Migration20261123000200_audit_trail.js';
import { Migration20261123000300_scim_provisioning } from './Migration20261123000300_scim_provisioning.js';
import { Migration20261123000400_sso } from './Migration20261123000400_sso.js';
import { Migration20261124010000_audit_append_function } from './Migration20261124010000_audit_append_function.js';
import { Migration20261124010100_audit_records_account_through_head } from './Migration20261124010100_audit_records_account_through_head.js';
import { Migration20261124050000_search_initials } from './Migration20261124050000_search_initials.js';
import { Migration20261124070000_users_vacuum_after_inserts } from './Migration20261124070000_users_vacuum_after_inserts.js';
import { Migration20261125010000_sso_browser_binding } from './Migration20261125010000_sso_browser_binding.js';
import { Migration20261125020000_credentials_lifecycle } from './Migration20261125020000_credentials_lifecycle.js';
import { Migration20261125030000_app_credentials } from './Migration20261125030000_app_credentials.js';
import { Migration20261125040000_audit_owner_and_keyed_chain } from './Migration20261125040000_audit_owner_and_keyed_chain.js';
import { Migration20261125040100_audit_shared_context } from './Migration20261125040100_audit_shared_context.js';

/** Applied in this order by the server at start and by `accessctl migrate`; same list for PGlite and PostgreSQL. */
export const migrationsList: MigrationObject[] = [
  { name: 'Migration20261122000100_foundation', class: Migration20261122000100_foundation },
  { name: 'Migration20261122000300_oauth_delegations', class: Migration20261122000300_oauth_delegations },
  { name: 'Migration20261122000400_calendar_feed', class: Migration20261122000400_calendar_feed },
  { name: 'Migration20261122000500_notification_subscriptions', class: Migration20261122000500_notification_subscriptions },
  { name: 'Migration20261122001000_search_strategies', class: Migration20261122001000_search_strategies },
  { name: 'Migration20261122001200_oauth_server', class: Migration20261122001200_oauth_server },
  { name: 'Migration20261122001300_idempotency_keys', class: Migration20261122001300_idempotency_keys },
  { name: 'Migration20261122001400_search_walk', class: Migration20261122001400_search_walk },
  { name: 'Migration20261123000100_security_fixes', class: Migration20261123000100_security_fixes },
  { name: 'Migration20261123000200_audit_trail', class: Migration20261123000200_audit_trail },
  { name: 'Migration20261123000300_scim_provisioning', class: Migration20261123000300_scim_provisioning },
  { name: 'Migration20261123000400_sso', class: Migration20261123000400_sso },
  { name: 'Migration20261124010000_audit_append_function', class: Migration20261124010000_audit_append_function },
  { name: 'Migration20261124010100_audit_records_account_through_head', class: Migration20261124010100_audit_records_account_through_head },
  { name: 'Migration20261124050000_search_initials', class: Migration20261124050000_search_initials },
  { name: 'Migration20261124070000_users_vacuum_after_inserts', class: Migration20261124070000_users_vacuum_after_inserts },
  { name: 'Migration20261125010000_sso_browser_binding', class: Migration20261125010000_sso_browser_binding },
  { name: 'Migration20261125020000_credentials_lifecycle', class: Migration20261125020000_credentials_lifecycle },
  { name: 'Migration20261125030000_app_credentials', class: Migration20261125030000_app_credentials },
  { name: 'Migration20261125040000_audit_owner_and_keyed_chain', class: Migration20261125040000_audit_owner_and_keyed_chain },
  { name: 'Migration20261125040100_audit_shared_context', class: Migration20261125040100_audit_shared_context },
];
