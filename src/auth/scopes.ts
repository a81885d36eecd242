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
 * Scopes over the account's credentials (API keys, provisioning tokens): only the product's own
 * apps (`web`, `mobile`) and integration apps may hold them; a third-party app is never registered with them.
 */
export const FIRST_PARTY_AND_INTEGRATION_SCOPES: readonly Scope[] = ['credentials.read', 'credentials.write'];

/** The scopes an app of this kind may be registered with. */
export function mayHoldScope(appKind: string, scope: string): boolean {
  return appKind !== 'third_party' || !(FIRST_PARTY_AND_INTEGRATION_SCOPES as readonly string[]).includes(scope);
}
