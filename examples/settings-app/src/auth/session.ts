import type { IssuedTokens, SignInFlow } from './sign-in';

/**
 * This tab's sign-in: its tokens (sessionStorage, so the redirect to the sign-in page and back keeps
 * them, and another tab signs in on its own) and whether the API asked for a more recent sign-in.
 */
const TOKENS_KEY = 'settings-app.tokens';

export interface StepUpRequest {
  maxAge: number;
}

export class AuthSession {
  private tokens: IssuedTokens | null = JSON.parse(sessionStorage.getItem(TOKENS_KEY) ?? 'null') as IssuedTokens | null;
  private refreshing: Promise<boolean> | null = null;
  private stepUp: StepUpRequest | null = null;
  private readonly listeners = new Set<() => void>();

  constructor(readonly flow: SignInFlow) {}

  get signedIn(): boolean {
    return this.tokens !== null;
  }

  accessToken(): string | undefined {
    return this.tokens?.accessToken;
  }

  store(tokens: IssuedTokens): void {
    this.tokens = tokens;
    sessionStorage.setItem(TOKENS_KEY, JSON.stringify(tokens));
  }

  /** After a 401 for a bad or expired token: one refresh at a time, shared by every request waiting on it. */
  refresh(): Promise<boolean> {
    const refreshToken = this.tokens?.refreshToken;
    if (!refreshToken) return Promise.resolve(false);
    this.refreshing ??= this.flow.refresh(refreshToken).then(
      (tokens) => { this.store(tokens); return true; },
      () => false,
    ).finally(() => { this.refreshing = null; });
    return this.refreshing;
  }

  /** Nothing left to refresh with: back to the sign-in page, then to where the user was. */
  signInAgain(): Promise<never> {
    sessionStorage.removeItem(TOKENS_KEY);
    this.tokens = null;
    return this.flow.begin(window.location.pathname);
  }

  /** The API answered a step-up challenge: the page shows a prompt (see StepUpPrompt). */
  requireStepUp(maxAge: number): void {
    this.stepUp = { maxAge };
    this.listeners.forEach((listener) => listener());
  }

  /** The user agreed to confirm: the sign-in page asks for the password again, then comes back here. */
  confirmSignIn(): Promise<never> {
    return this.flow.begin(window.location.pathname, this.stepUp?.maxAge ?? 0);
  }

  stepUpRequest = (): StepUpRequest | null => this.stepUp;

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };
}
