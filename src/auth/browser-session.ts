/**
 * The authorization server's sign-in session cookie: its value is the session's key (a bearer
 * secret). The API reads it only to tell which of a user's sign-in sessions is the requesting
 * browser's own (`SignInSession.current`, `allButCurrent`); it never authenticates anything.
 */
export const SIGN_IN_SESSION_COOKIE = 'oauth_session';

/** The sign-in session cookie's value in a `Cookie` header, if the browser sent one. */
export function browserSessionOf(cookieHeader: string | undefined): string | undefined {
  if (!cookieHeader) return undefined;
  for (const pair of cookieHeader.split(';')) {
    const separator = pair.indexOf('=');
    if (separator > 0 && pair.slice(0, separator).trim() === SIGN_IN_SESSION_COOKIE) {
      const value = pair.slice(separator + 1).trim();
      return value || undefined;
    }
  }
  return undefined;
}
