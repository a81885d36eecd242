/**
 * What the settings pages ask for. `credentials.*` lets the API keys page manage keys (with a recent
 * sign-in); a key is limited by no scope, so creating one needs every scope a person may hold.
 * The `spa` app must be registered with at least these.
 */
export const SCOPE = [
  'openid', 'users.read', 'users.write', 'oauth_delegations.read', 'oauth_delegations.write',
  'subscribers.read', 'subscribers.write', 'credentials.read', 'credentials.write', 'audit_records.read',
].join(' ');
