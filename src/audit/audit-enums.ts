import type { ChangeAction, ChangeResourceType } from '../db/change-journal.js';
import { closedSetEnum } from '../graphql/closed-set-enum.js';
import type { ActorType, MethodType } from './audit-record.js';
import type { MALFORMED_ACTION } from './stored-record.js';

const ACTION_DESCRIPTIONS: Record<ChangeAction | typeof MALFORMED_ACTION, string> = {
  create: 'The resource was created.',
  update: 'Fields of the resource were changed (see `details.fields`).',
  delete: 'The resource was deleted.',
  revoke: 'A credential or grant was revoked: an API key, a delegation, a provisioning token.',
  revoke_token: 'An OAuth token was revoked by its app (token revocation endpoint).',
  regenerate: 'A secret was replaced by a new one (the calendar feed key).',
  suspend: 'The user was suspended: everything that gave them access was revoked.',
  reactivate: 'The user may sign in again.',
  purge: 'Audit records past the retention period were removed.',
  change_password: 'The user changed their own password.',
  set_password: 'The user\'s password was set for them (by an administrator or an identity provider).',
  sign_in: 'The user signed in.',
  sign_in_failed: 'A sign-in was refused.',
  view_calendar_urls: 'Someone viewed the users\' calendar feed URLs (they carry secrets).',
  malformed: 'A stored record the server did not write: shown flagged (`malformed` says why) rather than failing the page.',
};

export const AuditActionEnum = closedSetEnum('AuditAction', 'What a change did; REST shows it in lower case (`SIGN_IN` is `sign_in`).', ACTION_DESCRIPTIONS);

export const AuditMethodTypeEnum = closedSetEnum('AuditMethodType', 'How the actor was authenticated; REST shows it in lower case (`API_TOKEN` is `api_token`).', {
  browser: 'A browser session (the sign-in pages).',
  oauth: 'An OAuth access token, of a user\'s delegation or of an app itself.',
  api_token: 'An API key (a user\'s or the account\'s).',
  identity_provider: 'The identity provider: SCIM provisioning or single sign-on.',
  other: 'The operator\'s command line, or the server itself.',
} satisfies Record<MethodType, string>);

export const AuditActorTypeEnum = closedSetEnum('AuditActorType', 'The type of an actor\'s reference; REST shows it in lower case (`USER_REFERENCE` is `user_reference`).', {
  user_reference: 'A user.',
  api_key_reference: 'An API key.',
  app_reference: 'An OAuth app, by its client id.',
  oauth_delegation_reference: 'A user\'s OAuth delegation to an app.',
  provisioning_token_reference: 'An identity provider\'s provisioning token.',
} satisfies Record<ActorType, string>);

type RootResourceType = `${ChangeResourceType}s`;

export const AuditRootResourceTypeEnum = closedSetEnum('AuditRootResourceType', 'The plural type of a record\'s root resource; REST shows it in lower case (`USERS` is `users`).', {
  users: 'Users: also every change to a user\'s keys, delegations, subscriptions, password and sign-ins.',
  accounts: 'The account (e.g. viewing the calendar feed URLs).',
  apps: 'OAuth apps.',
  api_keys: 'Account API keys.',
  audit_records: 'The audit trail itself (purges).',
  calendar_feed_keys: 'Calendar feed keys not tied to a user.',
  notification_subscriptions: 'Notification subscriptions not tied to a user.',
  oauth_delegations: 'OAuth delegations not tied to a user.',
  provisioning_tokens: 'Provisioning tokens.',
  sso_configurations: 'The single sign-on configuration.',
} satisfies Record<RootResourceType, string>);

/** The records' root resource types, as REST takes them (`users`). */
export const AUDIT_ROOT_RESOURCE_TYPES = Object.values(AuditRootResourceTypeEnum);
/** Every action, as REST takes it (`sign_in`). */
export const AUDIT_ACTIONS = Object.values(AuditActionEnum);
