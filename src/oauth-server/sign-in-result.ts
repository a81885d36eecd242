import type { SignInMade } from '../oauth-delegations/sign-in-sessions.js';

/**
 * The key under which a finished sign-in's interaction result says how the user signed in. The
 * library keeps the whole result with the interaction and hands it back on the resuming request,
 * whose save of the session records it (adapter.ts).
 */
const SIGN_IN_RESULT_KEY = 'signInMade';

/** The interaction result of a sign-in: the library's `login`, plus how it was made. */
export function signedInResult(userId: string, made: SignInMade): { login: { accountId: string } } & Record<string, unknown> {
  return { login: { accountId: userId }, [SIGN_IN_RESULT_KEY]: made };
}

/** How the sign-in behind an interaction result was made, when the result is a sign-in's. */
export function signInMadeBy(result: unknown): SignInMade | undefined {
  const made = (result as Record<string, unknown> | undefined)?.[SIGN_IN_RESULT_KEY] as Partial<SignInMade> | undefined;
  if (made?.method !== 'password' && made?.method !== 'single_sign_on') return undefined;
  return { method: made.method, ...(typeof made.identityProvider === 'string' ? { identityProvider: made.identityProvider } : {}) };
}
