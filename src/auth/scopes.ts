/** OAuth scopes a bearer token may hold; API keys are not scope-limited. */
export const SCOPES = [
  'users.read',
  'users.write',
  'oauth_delegations.read',
  'oauth_delegations.write',
  'subscribers.read',
  'subscribers.write',
  'audit_records.read',
] as const;

export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}
