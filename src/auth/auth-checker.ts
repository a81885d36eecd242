import { ForbiddenError, StepUpRequiredError } from '../errors/domain-errors.js';
import { requirePrincipal, type Context } from '../graphql/context.js';
import type { AccessRow } from './access-table.js';
import { policy } from './policy.js';
import { canUpdateUser, isAccountAdmin, isReadOnly, scopesOf, type Principal } from './principal.js';
import { isScope, type Scope } from './scopes.js';

/**
 * What an operation's row requires of the credential before anything runs: OAuth scopes, plus the
 * target-independent permissions. Target-dependent rules (self or can_update_user) are checked by
 * `policy` once the target is read.
 */
export type Requirement = Scope | 'write' | 'can_update_user' | 'account_admin';

const permissionChecks: Record<Exclude<Requirement, Scope>, { allows(p: Principal): boolean; denial: string }> = {
  write: { allows: (p) => !isReadOnly(p), denial: 'This credential is read-only.' },
  can_update_user: { allows: canUpdateUser, denial: 'This action requires the can_update_user permission.' },
  account_admin: {
    allows: isAccountAdmin,
    denial: 'This action is limited to account owners, admins and account API keys.',
  },
};

export function assertRequirements(principal: Principal, requirements: readonly Requirement[]): void {
  // Scopes first, so a token lacking one is told which scope it needs.
  const scopes = scopesOf(principal);
  for (const requirement of requirements) {
    if (isScope(requirement) && scopes && !scopes.has(requirement)) {
      throw new ForbiddenError(`This OAuth token lacks the required scope: ${requirement}`);
    }
  }
  for (const requirement of requirements) {
    if (isScope(requirement)) continue;
    const check = permissionChecks[requirement];
    if (!check.allows(principal)) throw new ForbiddenError(check.denial);
  }
}

/**
 * The one check of an operation's row, on every face: an authenticated principal holding what the
 * row requires; for credential management, not a rolled key in its grace period, and with a token
 * a browser sign-in obtained, a sign-in no older than STEP_UP_MAX_AGE_SECONDS (RFC 9470).
 */
export function assertAccess(row: AccessRow, context: unknown): void {
  const { runtime } = context as Context;
  const principal = requirePrincipal(context as Context);
  assertRequirements(principal, row.requires);
  if (!row.managesCredentials) return;
  policy.assertManagesCredentials(principal);
  if (principal.kind === 'oauth' && principal.browserSignIn) assertRecentSignIn(principal.browserSignIn.signedInAt, runtime.stepUpMaxAgeSeconds);
}

function assertRecentSignIn(signedInAt: Date | undefined, maxAgeSeconds: number): void {
  if (signedInAt && Date.now() - signedInAt.getTime() <= maxAgeSeconds * 1000) return;
  throw new StepUpRequiredError(maxAgeSeconds);
}
