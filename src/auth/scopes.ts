/** OAuth scopes a bearer token may hold; API keys are not scope-limited. */
export const SCOPES = [
  'users.read',
  'users.write',
  'oauth_delegations.read',
  'oauth_delegations.write',
  'subscribers.read',
  'subscribers.write',
  'audit_records.read',
  'credentials.read',
  'credentials.write',
] as const;

export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/**
 * Scopes that manage the account's credentials (API keys, apps, provisioning tokens, single
 * sign-on): only the product's own apps and the account's integrations may hold them, never a
 * third-party app.
 */
export const CREDENTIAL_SCOPES: ReadonlySet<string> = new Set<Scope>(['credentials.read', 'credentials.write']);
