import type { Response, Router } from 'express';

/** What the sign-in page offers an account's users besides (or instead of) the password form. */
export interface SignInOffer {
  /** "Sign in with <label>". */
  label: string;
  /** False when the account requires the other method: the password form refuses its users. */
  passwordAllowed: boolean;
  /**
   * When passwords are refused: true while some owner or admin is one the method may not sign in
   * (`SignInMethod.acceptsPasswordOf`), so the page still offers them the password form.
   */
  passwordForPrivileged?: boolean;
}

/**
 * The authorization server's side of the seam: a sign-in method that verified a user elsewhere
 * hands the result back through this, never through the authorization server's internals.
 */
export interface InteractionFinisher {
  /**
   * Signs `userId` in to interaction `interactionUid`, if that interaction still waits for a
   * sign-in and its app belongs to `accountId`. Returns where the browser continues (the
   * authorization server's resume URL, which only the browser that started it can use), or
   * undefined when there is nothing to continue. `identityProvider` names the provider the user
   * signed in at (shown with the sign-in session it makes).
   */
  signedIn(interactionUid: string, accountId: string, userId: string, identityProvider: string): Promise<string | undefined>;
  /** Sends one of the sign-in pages' plain HTML problem pages (same headers as the sign-in form). */
  problem(res: Response, status: number, title: string, message: string): void;
}

/** What the account's users are offered besides the password form: the first method with an offer wins. */
export async function firstOffer(methods: readonly SignInMethod[], accountId: string): Promise<{ method: SignInMethod; offer: SignInOffer } | undefined> {
  for (const method of methods) {
    const offer = await method.offerFor(accountId);
    if (offer) return { method, offer };
  }
  return undefined;
}

/**
 * Another way to sign in during an authorization server interaction (single sign-on). A feature
 * contributes one through `Feature.signInMethod`; the authorization server asks it what to offer,
 * lets it start the round trip from the sign-in form, and mounts its return routes.
 */
export interface SignInMethod {
  name: string;
  offerFor(accountId: string): Promise<SignInOffer | undefined>;
  /**
   * Whether the password of `userId` (already verified) still works although the offer refuses
   * passwords: for an owner or admin this method may not sign in, whom it would otherwise lock out.
   */
  acceptsPasswordOf?(accountId: string, userId: string): Promise<boolean>;
  /**
   * Starts the round trip bound to the interaction and to the browser that asked (the method sets
   * its own cookie on `res`); returns the URL to send the browser to.
   */
  begin(request: { interactionUid: string; accountId: string; loginHint: string }, res: Response): Promise<string>;
  /** The routes the provider sends the browser back to. */
  returnRoutes(router: Router, finisher: InteractionFinisher): void;
}
