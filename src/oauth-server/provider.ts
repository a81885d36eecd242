import Provider, { errors, interactionPolicy, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import { SIGN_IN_SESSION_COOKIE } from '../auth/browser-session.js';
import { firstOffer, type SignInMethod } from '../auth/sign-in-method.js';
import { signInSessionOrigin } from '../oauth-delegations/sign-in-sessions.js';
import { deriveKey } from '../auth/server-secret.js';
import { safeEqual } from '../auth/secrets.js';
import { SCOPES } from '../auth/scopes.js';
import type { TrustProxy } from '../config/config.js';
import type { Database } from '../db/database.js';
import type { Logger } from '../logging/logger.js';
import { createAdapterFactory } from './adapter.js';
import { findApp, previousClientSecret } from './apps.service.js';
import { Sealer } from './sealing.js';
import { loadSigningKeys } from './signing-keys.js';
import { problemPage } from './pages.js';
import { signInMadeBy } from './sign-in-result.js';
import { ACTIVE_USER } from '../users/user.sql.js';

/** Every endpoint of the authorization server lives under this prefix (discovery under /.well-known). */
export const OAUTH_PREFIX = '/oauth';

export const OAUTH_ROUTES = {
  authorization: `${OAUTH_PREFIX}/authorize`,
  token: `${OAUTH_PREFIX}/token`,
  revocation: `${OAUTH_PREFIX}/revoke`,
  introspection: `${OAUTH_PREFIX}/introspect`,
  jwks: `${OAUTH_PREFIX}/jwks`,
  userinfo: `${OAUTH_PREFIX}/userinfo`,
  end_session: `${OAUTH_PREFIX}/logout`,
} as const;

export const INTERACTION_PATH = `${OAUTH_PREFIX}/interaction`;

export const LIFETIMES = {
  accessToken: 60 * 60,
  authorizationCode: 60,
  refreshToken: 30 * 86_400,
  grant: 90 * 86_400,
  session: 14 * 86_400,
  /** A sign-in page left open this long starts over; abandoned ones are purged as soon as they expire. */
  interaction: 15 * 60,
  /**
   * A browser app's sign-in (grant, delegation, every rotated refresh token) ends this long after
   * it began, whatever happens: a token kept in a browser lives a day at most (OAuth browser-based apps BCP).
   */
  browserSignIn: 24 * 3600,
  /** A browser app's access tokens: short, since one may manage credentials and sits in a browser. */
  browserAccessToken: 10 * 60,
};

/**
 * A browser app (`spa`) is the one client that is a web application and authenticates with no
 * secret (mobile apps are `native`): how the library's lifetime hooks, which cannot read the
 * database, recognise it.
 */
function isBrowserApp(client: { applicationType?: string; clientAuthMethod?: string } | undefined): boolean {
  return client?.applicationType === 'web' && client.clientAuthMethod === 'none';
}

export interface OAuthServerSettings {
  /** The public API URL: the issuer, and the one resource (audience) tokens are for. */
  issuer: string;
  /** TRUST_PROXY, as Express has it. */
  trustProxy: TrustProxy;
}

/** Sealers per purpose: a leak of one kind of ciphertext key reveals nothing of the others. */
export function sealersFor(serverSecret: Buffer) {
  return {
    records: new Sealer(serverSecret, 'records'),
    clientSecrets: new Sealer(serverSecret, 'client-secrets'),
    signingKeys: new Sealer(serverSecret, 'signing-keys'),
  };
}

interface UserRow {
  id: string;
  name: string;
  email: string;
  time_zone: string;
}

/**
 * The library's prompts, plus two checks. A session whose user may no longer sign in (suspended,
 * deleted: `findAccount` finds nobody) asks for a sign-in, as no session would. Sessions are ended
 * with their user's access (`endUserAccess`); this covers one that outlived it (a user changed in
 * the database by hand, say), which would otherwise fail at the consent step.
 * And a session a password made (or one that did not record how) asks for a sign-in once the
 * user's account accepts no passwords (single sign-on required): it is the
 * password's word, which no longer lets anyone in, unless the user is an owner or admin the
 * required method may not sign in (their password still does).
 */
function signInPolicy(database: Database, signInMethods: readonly SignInMethod[]) {
  const policy = interactionPolicy.base();
  policy.get('login')!.checks.add(new interactionPolicy.Check('account_gone', 'the signed-in user can no longer sign in', (ctx) =>
    (ctx.oidc.session?.accountId && !ctx.oidc.account ? interactionPolicy.Check.REQUEST_PROMPT : interactionPolicy.Check.NO_NEED_TO_PROMPT)));
  policy.get('login')!.checks.add(new interactionPolicy.Check('password_refused', 'the account no longer accepts the password this session signed in with', async (ctx) => {
    const { session } = ctx.oidc;
    if (!session?.accountId || !session.uid || signInMethods.length === 0) return interactionPolicy.Check.NO_NEED_TO_PROMPT;
    const origin = await signInSessionOrigin(database.em(), { uid: session.uid, userId: session.accountId });
    // A sign-in finished in this very flow is saved only at the end of this request: its result says how it was made.
    const method = signInMadeBy(ctx.oidc.result)?.method ?? origin?.method;
    if (!origin || method === 'single_sign_on') return interactionPolicy.Check.NO_NEED_TO_PROMPT;
    const chosen = await firstOffer(signInMethods, origin.accountId);
    if (!chosen || chosen.offer.passwordAllowed) return interactionPolicy.Check.NO_NEED_TO_PROMPT;
    // An owner or admin the required method may not sign in keeps their password (a configuration an admin saved must not lock them out): their session stands.
    return (await chosen.method.acceptsPasswordOf?.(origin.accountId, session.accountId)) ? interactionPolicy.Check.NO_NEED_TO_PROMPT : interactionPolicy.Check.REQUEST_PROMPT;
  }));
  return policy;
}

/** The library's cookies: signed with a key of their own, HttpOnly, SameSite=Lax, Secure behind an https issuer. */
function cookieSettings(serverSecret: Buffer, secureCookies: boolean): Configuration['cookies'] {
  const cookieOptions = { httpOnly: true, sameSite: 'lax' as const, secure: secureCookies, overwrite: true };
  return {
    keys: [deriveKey(serverSecret, 'oauth-server:cookies').toString('base64url')],
    long: cookieOptions,
    short: cookieOptions,
    names: { session: SIGN_IN_SESSION_COOKIE, interaction: 'oauth_interaction', resume: 'oauth_interaction_resume' },
  };
}

/**
 * The one resource tokens are for, the API: an app gets the API scopes it was registered with,
 * and asking for one it was not registered with is an error, not a silent narrowing.
 */
function apiResourceIndicators(database: Database, apiResource: string): NonNullable<Configuration['features']>['resourceIndicators'] {
  return {
    enabled: true,
    defaultResource: () => apiResource,
    useGrantedResource: () => true,
    async getResourceServerInfo(ctx, resourceIndicator, client) {
      if (resourceIndicator !== apiResource) throw new errors.InvalidTarget();
      const app = await findApp(database.em(), client.clientId);
      const allowed = new Set(app?.scope.split(' ') ?? []);
      const requested = String(ctx.oidc.params?.scope ?? '').split(' ');
      const refused = SCOPES.filter((scope) => requested.includes(scope) && !allowed.has(scope));
      if (refused.length) throw new errors.InvalidScope('the app is not registered for this scope', refused.join(' '));
      return {
        scope: SCOPES.filter((scope) => allowed.has(scope)).join(' '),
        audience: apiResource,
        accessTokenFormat: 'opaque',
        accessTokenTTL: isBrowserApp(client) ? LIFETIMES.browserAccessToken : LIFETIMES.accessToken,
      };
    },
  };
}

/**
 * The endpoints beyond authorization and token (client credentials, revocation, introspection,
 * userinfo), and the API as the one resource; no development sign-in pages. Discovery advertises
 * only what is served end to end: pushed authorization requests and DPoP-bound tokens are not (the
 * API checks no DPoP proof), so both are off and absent from the metadata.
 */
function featureSettings(database: Database, apiResource: string): Configuration['features'] {
  return {
    devInteractions: { enabled: false },
    pushedAuthorizationRequests: { enabled: false },
    dPoP: { enabled: false },
    clientCredentials: { enabled: true },
    // An app may revoke and introspect only the tokens issued to it.
    revocation: { enabled: true, allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId },
    introspection: { enabled: true, allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId },
    userinfo: { enabled: true },
    resourceIndicators: apiResourceIndicators(database, apiResource),
  };
}

/** How long each kind of the library's records lives (`LIFETIMES`). */
function tokenLifetimes(): Configuration['ttl'] {
  return {
    AccessToken: (_ctx, _token, client) => (isBrowserApp(client) ? LIFETIMES.browserAccessToken : LIFETIMES.accessToken),
    AuthorizationCode: LIFETIMES.authorizationCode,
    ClientCredentials: (ctx) => clientCredentialsLifetime(ctx),
    // A browser app's refresh tokens rotate on every use and all end when its sign-in's day does.
    RefreshToken: (_ctx, token, client) => {
      if (!isBrowserApp(client)) return LIFETIMES.refreshToken;
      const began = token.iiat ?? token.iat ?? Math.floor(Date.now() / 1000);
      return Math.max(1, began + LIFETIMES.browserSignIn - Math.floor(Date.now() / 1000));
    },
    Grant: LIFETIMES.grant,
    Session: LIFETIMES.session,
    Interaction: LIFETIMES.interaction,
    IdToken: LIFETIMES.accessToken,
  };
}

/** The signed-in user's claims; a suspended or deleted user is found by nobody (their session asks for a sign-in). */
function accountFinder(database: Database): Configuration['findAccount'] {
  return async (_ctx, sub) => {
    const [user] = await database.em().execute<UserRow[]>(`select id, name, email, time_zone from users where id = ? and ${ACTIVE_USER}`, [sub]);
    if (!user) return undefined;
    return { accountId: user.id, claims: () => ({ sub: user.id, name: user.name, email: user.email, zoneinfo: user.time_zone }) };
  };
}

/** The request's client authenticated with its previous secret, which ends then: its client-credentials tokens end no later. */
const PREVIOUS_SECRET_ENDS_AT = Symbol('previous client secret ends at');

/**
 * After a rotation the previous secret still authenticates the app until its grace period ends
 * (read from the database at each use, so every instance agrees and the end needs no restart).
 */
function acceptPreviousClientSecret(provider: Provider, database: Database, clientSecrets: Sealer): void {
  const compareCurrentSecret = provider.Client.prototype.compareClientSecret;
  provider.Client.prototype.compareClientSecret = async function compareClientSecret(this: InstanceType<Provider['Client']>, actual: string) {
    if (await compareCurrentSecret.call(this, actual)) return true;
    const previous = await previousClientSecret(database.em(), clientSecrets, this.clientId);
    const matches = previous !== undefined && typeof actual === 'string' && safeEqual(Buffer.from(previous.secret), Buffer.from(actual));
    if (matches) Object.assign(Provider.ctx ?? {}, { [PREVIOUS_SECRET_ENDS_AT]: previous.endsAt });
    return matches;
  };
}

/** A client-credentials token lives its usual time, but no longer than the secret that obtained it. */
function clientCredentialsLifetime(ctx: KoaContextWithOIDC | undefined): number {
  const endsAt = (ctx as { [PREVIOUS_SECRET_ENDS_AT]?: Date } | undefined)?.[PREVIOUS_SECRET_ENDS_AT];
  if (!endsAt) return LIFETIMES.accessToken;
  return Math.max(1, Math.min(LIFETIMES.accessToken, Math.floor((endsAt.getTime() - Date.now()) / 1000)));
}

/**
 * oidc-provider configured as this product's authorization server: authorization code with PKCE
 * (S256; the library supports nothing else) for every sign-in app, rotating refresh tokens (a
 * reused one revokes the grant), client credentials for integrations, revocation, introspection.
 * Access tokens are opaque and for one resource, the API, with the product's scopes.
 */
export async function createProvider(options: { database: Database; serverSecret: Buffer; logger: Logger; settings: OAuthServerSettings; signInMethods?: readonly SignInMethod[] }): Promise<Provider> {
  const { database, serverSecret, logger, settings } = options;
  const sealers = sealersFor(serverSecret);
  const issuer = settings.issuer.replace(/\/+$/, '');
  const apiResource = `${issuer}/`;
  const secureCookies = new URL(issuer).protocol === 'https:';

  const configuration: Configuration = {
    adapter: createAdapterFactory(database, sealers.records, sealers.clientSecrets),
    jwks: { keys: await loadSigningKeys(database.em(), sealers.signingKeys) },
    cookies: cookieSettings(serverSecret, secureCookies),
    routes: OAUTH_ROUTES,
    interactions: { url: (_ctx, interaction) => `${INTERACTION_PATH}/${interaction.uid}`, policy: signInPolicy(database, options.signInMethods ?? []) },
    claims: { openid: ['sub'], profile: ['name', 'email', 'zoneinfo'] },
    scopes: ['openid', 'offline_access', 'profile'],
    pkce: { required: () => true },
    // Only the authorization code flow: nothing issues tokens from the authorization endpoint.
    responseTypes: ['code'],
    allowOmittingSingleRegisteredRedirectUri: false,
    features: featureSettings(database, apiResource),
    findAccount: accountFinder(database),
    // Refresh tokens for every sign-in app, not only for offline_access; rotated on every use.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    // A token lives as long as its grant (its delegation), not as long as the browser's sign-in
    // session: ending the sessions (signing out of the mobile app) leaves the web app's delegation
    // working; revoking a delegation is what ends its tokens.
    expiresWithSession: async () => false,
    ttl: tokenLifetimes(),
    async renderError(ctx: KoaContextWithOIDC, out) {
      ctx.type = 'html';
      ctx.body = problemPage('Sign-in problem', `${String(out.error ?? 'error')}: ${String(out.error_description ?? 'the request could not be completed.')}`);
    },
  };

  const provider = new Provider(issuer, configuration);
  // The proxies TRUST_PROXY names say the scheme and the client; with a hop count, only that many.
  // An https issuer without TRUST_PROXY is still served behind TLS termination: the scheme is then
  // taken from X-Forwarded-Proto, so Secure cookies are set (the library refuses them on what looks
  // like plain http); nothing of ours reads the library's idea of the client address.
  provider.proxy = settings.trustProxy !== false || secureCookies;
  if (typeof settings.trustProxy === 'number') provider.maxIpsCount = settings.trustProxy;
  acceptPreviousClientSecret(provider, database, sealers.clientSecrets);
  provider.on('server_error', (_ctx, error) => logger.error({ err: error }, 'authorization server error'));
  return provider;
}
