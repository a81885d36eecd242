import * as oidc from 'openid-client';
import { digestSecret } from '../auth/secrets.js';
import { fetchIssuerMetadata } from './sso.discovery.js';
import { guardedFetch } from '../http/outbound-fetch.js';
import { oidcRedirectUri } from './sso.endpoints.js';
import type { AssertedIdentity } from './sso.matching.js';
import { REFUSED, Refusal, assertedEmail } from './sso.refusals.js';
import type { SsoSettings } from './sso.service.js';

type OidcSettings = NonNullable<SsoSettings['oidc']>;

/** Discovery documents are re-read after this, so a provider's key rotation is picked up. */
const DISCOVERY_TTL_MS = 10 * 60_000;

function isLoopback(url: URL): boolean {
  return ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
}

/** One round trip's authorization request: where to send the browser, and what checks the answer (kept with the round trip). */
export interface OidcAuthorizationRequest {
  url: string;
  nonce: string;
  codeVerifier: string;
}

/** What came back to the redirect URI, with what the round trip kept to check it. */
export interface OidcCallback {
  /** The callback request's URL as received (its query carries the code and the state). */
  originalUrl: string;
  state: string;
  nonce: string;
  codeVerifier: string;
}

/**
 * The OpenID Connect client of the sign-in: the providers' discovery documents (cached per issuer,
 * client and secret), the authorization request (code flow with PKCE, state and nonce) and the
 * code exchange, whose ID token is checked against the provider's published keys.
 */
export class OidcClient {
  private readonly discovered = new Map<string, { at: number; config: Promise<oidc.Configuration> }>();

  constructor(private readonly apiUrl: string, private readonly production: boolean) {}

  private configuration(settings: OidcSettings): Promise<oidc.Configuration> {
    const key = `${settings.issuer}\n${settings.clientId}\n${digestSecret(settings.clientSecret ?? '')}`;
    const cached = this.discovered.get(key);
    if (cached && Date.now() - cached.at < DISCOVERY_TTL_MS) return cached.config;
    const issuer = new URL(settings.issuer);
    const auth = settings.clientSecret ? oidc.ClientSecretBasic(settings.clientSecret) : oidc.None();
    // The ID token's signature is checked against the provider's published keys too, not only
    // trusted because it came over TLS from the token endpoint (the library's default).
    // Plain http only for a provider on this machine (a test's); anything else must be https.
    const execute = isLoopback(issuer) ? [oidc.enableNonRepudiationChecks, oidc.allowInsecureRequests] : [oidc.enableNonRepudiationChecks];
    // The same outbound guard as when the provider was configured, for the discovery document and
    // for every call the library makes from it (token and key endpoints): hosts may resolve elsewhere since.
    const outbound = { production: this.production };
    const config = fetchIssuerMetadata(settings.issuer, outbound).then((metadata) => {
      const configuration = new oidc.Configuration(metadata as oidc.ServerMetadata, settings.clientId, undefined, auth);
      for (const apply of execute) apply(configuration);
      configuration[oidc.customFetch] = (url, options) => guardedFetch(url, options, outbound);
      return configuration;
    });
    config.catch(() => this.discovered.delete(key));
    this.discovered.set(key, { at: Date.now(), config });
    return config;
  }

  /** The provider's authorization URL for a round trip with this `state`; the login hint is passed on. */
  async authorizationRequest(settings: OidcSettings, state: string, loginHint: string): Promise<OidcAuthorizationRequest> {
    const config = await this.configuration(settings);
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: oidcRedirectUri(this.apiUrl),
      scope: 'openid email profile',
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      ...(loginHint ? { login_hint: loginHint } : {}),
    }).href;
    return { url, nonce, codeVerifier };
  }

  /** Exchanges the callback's code (state, nonce and PKCE checked) and returns who the ID token says signed in. */
  async identityFromCallback(settings: OidcSettings, callback: OidcCallback): Promise<AssertedIdentity> {
    const { originalUrl } = callback;
    const query = originalUrl.includes('?') ? originalUrl.slice(originalUrl.indexOf('?')) : '';
    const currentUrl = new URL(`${oidcRedirectUri(this.apiUrl)}${query}`);
    const tokens = await oidc.authorizationCodeGrant(await this.configuration(settings), currentUrl, {
      pkceCodeVerifier: callback.codeVerifier,
      expectedState: callback.state,
      expectedNonce: callback.nonce,
      idTokenExpected: true,
    });
    const claims = tokens.claims();
    if (!claims || typeof claims.sub !== 'string' || typeof claims.iss !== 'string') throw new Refusal(REFUSED, 401, 'the ID token names no subject');
    // Entra ID says "verified" as xms_edov (email domain owner verified), not email_verified.
    // Only a verified email may link a user on a first sign-in; the subject is who it is after.
    const verifiedEmail = claims.email_verified === true || claims.xms_edov === true;
    return { issuer: claims.iss, subject: claims.sub, email: verifiedEmail ? assertedEmail(claims.email) : undefined, name: typeof claims.name === 'string' ? claims.name : undefined };
  }
}
