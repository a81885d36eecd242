import * as oauth from 'oauth4webapi';
import type { AppConfig } from '../config';
import { SCOPE } from './scope';

/** Kept across the redirect to the sign-in page and back (this tab only). */
const PENDING_KEY = 'settings-app.pending-sign-in';

interface PendingSignIn {
  verifier: string;
  state: string;
  returnTo: string;
  maxAge?: number;
}

export interface IssuedTokens {
  accessToken: string;
  refreshToken?: string;
  /** Epoch milliseconds. */
  expiresAt: number;
}

/**
 * Authorization code + PKCE for a public browser client (oauth4webapi). The API is the issuer; the
 * redirect URI is this origin's /callback, registered exactly. Plain http is accepted only for a
 * loopback API (local development and the browser test).
 */
export class SignInFlow {
  private constructor(
    private readonly server: oauth.AuthorizationServer,
    private readonly client: oauth.Client,
    private readonly options: { [oauth.allowInsecureRequests]?: boolean },
  ) {}

  static async discover(config: AppConfig): Promise<SignInFlow> {
    const issuer = new URL(config.apiUrl);
    const options = { [oauth.allowInsecureRequests]: ['127.0.0.1', 'localhost'].includes(issuer.hostname) };
    const server = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...options }));
    const client: oauth.Client = { client_id: config.clientId, id_token_signed_response_alg: server.id_token_signing_alg_values_supported?.[0] };
    return new SignInFlow(server, client, options);
  }

  get redirectUri(): string {
    return `${window.location.origin}/callback`;
  }

  /** Leaves for the sign-in page. With `maxAge` (a step-up), the page asks for the password again even inside a live session. */
  async begin(returnTo: string, maxAge?: number): Promise<never> {
    const pending: PendingSignIn = { verifier: oauth.generateRandomCodeVerifier(), state: oauth.generateRandomState(), returnTo, maxAge };
    sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
    const url = new URL(this.server.authorization_endpoint!);
    url.search = new URLSearchParams({
      client_id: this.client.client_id,
      redirect_uri: this.redirectUri,
      response_type: 'code',
      scope: SCOPE,
      state: pending.state,
      code_challenge: await oauth.calculatePKCECodeChallenge(pending.verifier),
      code_challenge_method: 'S256',
      ...(maxAge !== undefined ? { max_age: String(maxAge) } : {}),
    }).toString();
    window.location.assign(url.href);
    return new Promise<never>(() => {});
  }

  /** Back on /callback: checks the state, redeems the code with the PKCE verifier. */
  async finish(callbackUrl: URL): Promise<{ tokens: IssuedTokens; returnTo: string }> {
    const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) ?? 'null') as PendingSignIn | null;
    sessionStorage.removeItem(PENDING_KEY);
    if (!pending) throw new Error('No sign-in was started in this tab.');
    const parameters = oauth.validateAuthResponse(this.server, this.client, callbackUrl, pending.state);
    const response = await oauth.authorizationCodeGrantRequest(this.server, this.client, oauth.None(), parameters, this.redirectUri, pending.verifier, this.options);
    const result = await oauth.processAuthorizationCodeResponse(this.server, this.client, response, { maxAge: pending.maxAge });
    return { tokens: issued(result), returnTo: pending.returnTo };
  }

  /** A rotating refresh token: each use answers a new one. */
  async refresh(refreshToken: string): Promise<IssuedTokens> {
    const response = await oauth.refreshTokenGrantRequest(this.server, this.client, oauth.None(), refreshToken, this.options);
    return issued(await oauth.processRefreshTokenResponse(this.server, this.client, response));
  }
}

function issued(result: oauth.TokenEndpointResponse): IssuedTokens {
  return {
    accessToken: result.access_token,
    ...(result.refresh_token ? { refreshToken: result.refresh_token } : {}),
    expiresAt: Date.now() + (result.expires_in ?? 600) * 1000,
  };
}
