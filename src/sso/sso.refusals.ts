import { USER_FIELD_LIMITS } from '../users/user.validation.js';
import type { PrivilegedRefusal } from './sso.matching.js';

const PLAUSIBLE_EMAIL = /^[^\s@]+@[^\s@]+$/;

/** The pages a refused single sign-on shows: a title and what to do next, never why in detail. */
export const EXPIRED = ['Sign-in expired', 'This sign-in has expired or was already used. Go back to the app and start again.'] as const;
export const REFUSED = ['Sign-in refused', 'The answer from your identity provider could not be accepted. Go back to the app and start again.'] as const;
export const NO_ACCESS = ['Sign-in refused', 'Your identity provider signed you in, but that identity has no access here. Ask your administrator.'] as const;
export const STRANGER = ['Sign-in refused', 'This sign-in was started in another browser, so it was refused. Go back to the app and start again.'] as const;

/**
 * An owner or admin the configuration may not sign in (only a configuration saved with owner rights
 * or by them signs them in, only an email set that way links them; `privilegedRefusal`): what they
 * read, and what the audit trail says.
 */
export const PRIVILEGED: Record<PrivilegedRefusal, { page: readonly [string, string]; reason: string }> = {
  configuration: {
    page: ['Sign-in refused', 'Single sign-on cannot sign in the owner or an admin until the owner saves the single sign-on configuration. Sign in with your password, or ask the account owner.'],
    reason: 'owner or admin: the configuration was not saved by the owner or by this user',
  },
  email: {
    page: ['Sign-in refused', 'Single sign-on cannot sign in the owner or an admin by their email until the owner, or that user themself, saves that email (before their first single sign-on as owner or admin). Sign in with your password, or ask the account owner.'],
    reason: 'owner or admin: the email was not set by the owner or by this user',
  },
};

/** Why a returning answer is refused; logged (never shown) so an operator can tell the cases apart. */
export class Refusal extends Error {
  constructor(readonly page: readonly [string, string], readonly status: number, reason: string, readonly about?: { userId: string; audited: string }) {
    super(reason);
  }
}

/** An email the provider asserted, if it fits a user's email; anything else refuses the answer. */
export function assertedEmail(value: unknown): string {
  if (typeof value !== 'string' || value.length > USER_FIELD_LIMITS.email.max || !PLAUSIBLE_EMAIL.test(value)) {
    throw new Refusal(REFUSED, 401, 'the provider asserted no usable email');
  }
  return value;
}
