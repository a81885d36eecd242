import { recordChange } from '../db/change-journal.js';
import express, { type Request, type Response, type Router } from 'express';
import * as oidc from 'openid-client';
import { SAML, ValidateInResponseTo, type CacheProvider } from '@node-saml/node-saml';
import type { HttpRouteDeps } from '../app/feature.js';
import { digestSecret, newSecretToken, safeEqual } from '../auth/secrets.js';
import type { InteractionFinisher, SignInMethod } from '../auth/sign-in-method.js';
import { NotFoundError } from '../errors/domain-errors.js';
import { Sealer } from '../oauth-server/sealing.js';
import { USER_FIELD_LIMITS } from '../users/user.validation.js';
import { fetchIssuerMetadata } from './sso.discovery.js';
import { SSO_PATHS, oidcRedirectUri, samlAssertionConsumerUrl, samlEntityId } from './sso.endpoints.js';
import { ssoRefusesPrivilegedUser, ssoRefusesSomePrivilegedUser, userForAssertedIdentity, type AssertedIdentity, type PrivilegedRefusal } from './sso.matching.js';
import { SsoService, ssoSecretSealer, type SsoSettings } from './sso.service.js';

/** A round trip to the provider must come back within this; then its state is refused. */
const ROUND_TRIP_SECONDS = 10 * 60;
const EMAIL_NAME_ID = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';
const PERSISTENT_NAME_ID = 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent';
/** The email attribute as Entra ID and AD FS name it (others send `email` or `mail`). */
const EMAIL_CLAIM = 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress';
const PLAUSIBLE_EMAIL = /^[^\s@]+@[^\s@]+$/;
/** Discovery documents are re-read after this, so a provider's key rotation is picked up. */
const DISCOVERY_TTL_MS = 10 * 60_000;

const EXPIRED = ['Sign-in expired', 'This sign-in has expired or was already used. Go back to the app and start again.'] as const;
const REFUSED = ['Sign-in refused', 'The answer from your identity provider could not be accepted. Go back to the app and start again.'] as const;
const NO_ACCESS = ['Sign-in refused', 'Your identity provider signed you in, but that identity has no access here. Ask your administrator.'] as const;
const STRANGER = ['Sign-in refused', 'This sign-in was started in another browser, so it was refused. Go back to the app and start again.'] as const;
/** An owner or admin the configuration may not sign in (SPEC section 17; `privilegedRefusal`): what they read, and what the audit trail says. */
const PRIVILEGED: Record<PrivilegedRefusal, { page: readonly [string, string]; reason: string }> = {
  configuration: {
    page: ['Sign-in refused', 'Single sign-on cannot sign in the owner or an admin until the owner saves the single sign-on configuration. Sign in with your password, or ask the account owner.'],
    reason: 'owner or admin: the configuration was not saved by the owner or by this user',
  },
  email: {
    page: ['Sign-in refused', 'Single sign-on cannot sign in the owner or an admin by their email until the owner, or that user themself, saves that email (before their first single sign-on as owner or admin). Sign in with your password, or ask the account owner.'],
    reason: 'owner or admin: the email was not set by the owner or by this user',
  },
};

/**
 * The cookie that binds a round trip to the browser that began it: random, HttpOnly, SameSite=Lax
 * (sent on the provider's top-level redirect back, never on another site's request), only its
 * digest stored with the round trip. A provider link carried to another browser arrives without it.
 */
const BROWSER_COOKIE = 'sso_browser';
const BROWSER_COOKIE_PATH = '/sso';

function browserCookieOf(req: Request): string | undefined {
  for (const pair of (req.headers.cookie ?? '').split(';')) {
    const separator = pair.indexOf('=');
    if (separator > 0 && pair.slice(0, separator).trim() === BROWSER_COOKIE) return pair.slice(separator + 1).trim();
  }
  return undefined;
}

/** Why a returning answer is refused; logged (never shown) so an operator can tell the cases apart. */
class Refusal extends Error {
  constructor(readonly page: readonly [string, string], readonly status: number, reason: string, readonly about?: { userId: string; audited: string }) {
    super(reason);
  }
}

interface RoundTrip {
  state_digest: string;
  account_id: string;
  browser_digest: string | null;
  saml_identity_sealed: string | null;
  interaction_uid: string;
  oidc_nonce: string | null;
  oidc_code_verifier_sealed: string | null;
  saml_request_id: string | null;
}

function isLoopback(url: URL): boolean {
  return ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
}

function assertedEmail(value: unknown): string {
  if (typeof value !== 'string' || value.length > USER_FIELD_LIMITS.email.max || !PLAUSIBLE_EMAIL.test(value)) {
    throw new Refusal(REFUSED, 401, 'the provider asserted no usable email');
  }
  return value;
}

/**
 * Single sign-on as a sign-in method of the authorization server: the round trip to the account's
 * identity provider (OIDC with PKCE, state and nonce; SAML with RelayState and InResponseTo), each
 * bound to one interaction and usable once, and the verified identity matched to a user.
 */
export function ssoSignInMethod(deps: HttpRouteDeps): SignInMethod {
  const { database, logger } = deps;
  const apiUrl = deps.runtime.urls.api;
  const sealer = ssoSecretSealer(deps.runtime.serverSecret);
  const verifierSealer = new Sealer(deps.runtime.serverSecret, 'sso-round-trips');
  const identitySealer = new Sealer(deps.runtime.serverSecret, 'sso-answers');
  const secureCookies = new URL(apiUrl).protocol === 'https:';
  const service = () => new SsoService(database.em(), database.transactions, sealer);
  const discovered = new Map<string, { at: number; config: Promise<oidc.Configuration> }>();

  function oidcConfiguration(settings: NonNullable<SsoSettings['oidc']>): Promise<oidc.Configuration> {
    const key = `${settings.issuer}\n${settings.clientId}\n${digestSecret(settings.clientSecret ?? '')}`;
    const cached = discovered.get(key);
    if (cached && Date.now() - cached.at < DISCOVERY_TTL_MS) return cached.config;
    const issuer = new URL(settings.issuer);
    const auth = settings.clientSecret ? oidc.ClientSecretBasic(settings.clientSecret) : oidc.None();
    // The ID token's signature is checked against the provider's published keys too, not only
    // trusted because it came over TLS from the token endpoint (the library's default).
    // Plain http only for a provider on this machine (a test's); anything else must be https.
    const execute = isLoopback(issuer) ? [oidc.enableNonRepudiationChecks, oidc.allowInsecureRequests] : [oidc.enableNonRepudiationChecks];
    // The same SSRF-guarded fetch as when the provider was configured: the issuer's host may resolve elsewhere since.
    const config = fetchIssuerMetadata(settings.issuer, { production: deps.runtime.production }).then((metadata) => {
      const configuration = new oidc.Configuration(metadata as oidc.ServerMetadata, settings.clientId, undefined, auth);
      for (const apply of execute) apply(configuration);
      return configuration;
    });
    config.catch(() => discovered.delete(key));
    discovered.set(key, { at: Date.now(), config });
    return config;
  }

  function samlFor(accountId: string, settings: NonNullable<SsoSettings['saml']>, cacheProvider: CacheProvider): SAML {
    const entityId = samlEntityId(apiUrl, accountId);
    return new SAML({
      entryPoint: settings.ssoUrl,
      issuer: entityId,
      audience: entityId,
      callbackUrl: samlAssertionConsumerUrl(apiUrl),
      idpCert: settings.certificates,
      idpIssuer: settings.idpEntityId,
      wantAssertionsSigned: true,
      wantAuthnResponseSigned: false,
      validateInResponseTo: ValidateInResponseTo.always,
      requestIdExpirationPeriodMs: ROUND_TRIP_SECONDS * 1000,
      acceptedClockSkewMs: 60_000,
      identifierFormat: EMAIL_NAME_ID,
      disableRequestedAuthnContext: true,
      cacheProvider,
    });
  }

  async function requiredSettings(accountId: string): Promise<SsoSettings> {
    const settings = await service().settings(accountId);
    if (!settings) throw new NotFoundError('single sign-on configuration');
    return settings;
  }

  const TRIP_COLUMNS = 'state_digest, account_id, browser_digest, interaction_uid, oidc_nonce, oidc_code_verifier_sealed, saml_request_id, saml_identity_sealed';

  /**
   * Marks the round trip used and returns it, or refuses: unknown, expired and replayed look alike.
   * It is used up even when the browser is not the one that began it: an answer that reached a
   * stranger's browser first can then not be finished by anyone (a forwarded link included).
   */
  async function takeRoundTrip(req: Request, state: unknown, protocol: 'oidc' | 'saml'): Promise<RoundTrip> {
    if (typeof state !== 'string' || state.length === 0 || state.length > 200) throw new Refusal(EXPIRED, 400, 'no state');
    const em = database.em();
    const [trip] = await database.transactions.run(em, (tx) => tx.execute<RoundTrip[]>(
      `update sso_round_trips set used_at = now()
        where state_digest = ? and protocol = ? and used_at is null and expires_at > now()
          and (protocol <> 'saml' or answered_at is not null)
        returning ${TRIP_COLUMNS}`,
      [digestSecret(state), protocol],
    ), 'sso.take-round-trip');
    if (!trip) throw new Refusal(EXPIRED, 400, 'unknown, expired or already used state');
    const cookie = browserCookieOf(req);
    if (!trip.browser_digest || !cookie || !safeEqual(Buffer.from(digestSecret(cookie)), Buffer.from(trip.browser_digest))) {
      throw Object.assign(new Refusal(STRANGER, 403, 'the answer came back to another browser than the one that began the round trip'), { trip });
    }
    return trip;
  }

  /** The SAML answer, posted once per round trip: claims it (a replay finds nothing) and returns it. */
  async function claimSamlAnswer(state: unknown): Promise<RoundTrip> {
    if (typeof state !== 'string' || state.length === 0 || state.length > 200) throw new Refusal(EXPIRED, 400, 'no RelayState');
    const em = database.em();
    const [trip] = await database.transactions.run(em, (tx) => tx.execute<RoundTrip[]>(
      `update sso_round_trips set answered_at = now()
        where state_digest = ? and protocol = 'saml' and answered_at is null and used_at is null and expires_at > now()
        returning ${TRIP_COLUMNS}`,
      [digestSecret(state)],
    ), 'sso.claim-saml-answer');
    if (!trip) throw new Refusal(EXPIRED, 400, 'unknown, expired or already answered RelayState');
    return trip;
  }

  /** The sign-in's writes as the audit trail sees them: a browser at this address, acting as `userId` once known. */
  function browserWrites(req: Request, res: Response, userId?: string) {
    return database.transactions.onBehalfOf({
      face: 'oauth',
      requestId: res.locals.requestId as string | undefined,
      remoteAddress: req.ip,
      description: `${req.method} ${req.path}`,
      ...(userId ? { actor: { type: 'user', id: userId } } : {}),
    });
  }

  /** A refused answer for a known round trip is the account's failed sign-in (the provider named, no assertion kept). */
  async function recordRefusal(req: Request, res: Response, trip: RoundTrip, reason: string, userId?: string): Promise<void> {
    await browserWrites(req, res).run(database.em(), async (tx) => {
      recordChange(tx, {
        accountId: trip.account_id,
        action: 'sign_in_failed',
        resource: { type: 'account', id: trip.account_id },
        ...(userId ? { userId } : {}),
        fields: [{ name: 'single_sign_on', value: reason.slice(0, 200) }],
      });
    }, 'sso.sign-in-refused');
  }

  async function signInWith(req: Request, trip: RoundTrip, identity: AssertedIdentity, finisher: InteractionFinisher, res: Response): Promise<void> {
    const settings = await requiredSettings(trip.account_id).catch(() => { throw new Refusal(REFUSED, 401, 'the account has no provider any more'); });
    const em = database.em();
    const match = await browserWrites(req, res).run(em, async (tx) => {
      const found = await userForAssertedIdentity(tx, trip.account_id, identity, settings.jit, settings.saved);
      if (found && !found.refused) {
        recordChange(tx, {
          accountId: trip.account_id,
          action: 'sign_in',
          resource: { type: 'user', id: found.userId },
          userId: found.userId,
          fields: [{ name: 'single_sign_on', value: `${settings.protocol}: ${settings.displayName}` }],
        });
      }
      return found;
    }, 'sso.sign-in');
    if (!match && !identity.email) throw new Refusal(REFUSED, 401, 'an unlinked subject with no usable email');
    if (!match) throw new Refusal(NO_ACCESS, 403, 'no eligible user for the asserted subject or email');
    if (match.refused) {
      const { page, reason } = PRIVILEGED[match.refused];
      throw new Refusal(page, 403, reason, { userId: match.userId, audited: reason });
    }
    const { userId } = match;
    res.clearCookie(BROWSER_COOKIE, { path: BROWSER_COOKIE_PATH });
    const resumeAt = await finisher.signedIn(trip.interaction_uid, trip.account_id, userId, settings.displayName);
    if (!resumeAt) throw new Refusal(EXPIRED, 400, 'the interaction no longer waits for a sign-in');
    logger.info({ accountId: trip.account_id, userId, protocol: settings.protocol, provider: settings.displayName }, 'single sign-on');
    res.redirect(303, resumeAt);
  }

  /**
   * One step of the way back from the provider: `take` finds the round trip (refusing an unknown,
   * used or another browser's one), `step` does the rest. A refusal shows the page that says so and,
   * when it names a round trip, is the account's failed sign-in.
   */
  function returnStep(protocol: 'oidc' | 'saml', take: (req: Request) => Promise<RoundTrip>, step: (req: Request, res: Response, trip: RoundTrip) => Promise<void>, problem: InteractionFinisher['problem']) {
    return async (req: Request, res: Response) => {
      let trip: RoundTrip | undefined;
      try {
        trip = await take(req);
        await step(req, res, trip);
      } catch (error) {
        if (!(error instanceof Refusal)) throw error;
        trip ??= (error as Refusal & { trip?: RoundTrip }).trip;
        logger.warn({ protocol, reason: error.message }, 'single sign-on refused');
        // Unknown, expired and replayed states name no account: nothing to record them against.
        if (trip) await recordRefusal(req, res, trip, `${protocol}: ${error.about?.audited ?? error.page[0]}`, error.about?.userId);
        problem(res, error.status, error.page[0], error.page[1]);
      }
    };
  }

  /** The provider's verification, any failure of it a refusal (its reason logged, never shown). */
  async function verified(verify: () => Promise<AssertedIdentity>): Promise<AssertedIdentity> {
    try {
      return await verify();
    } catch (error) {
      if (error instanceof Refusal) throw error;
      throw new Refusal(REFUSED, 401, error instanceof Error ? error.message.slice(0, 300) : 'verification failed');
    }
  }

  return {
    name: 'sso',

    async offerFor(accountId) {
      const configuration = await service().show(accountId);
      if (!configuration) return undefined;
      const saved = { userId: configuration.savedByUserId, ownerRights: configuration.savedWithOwnerRights };
      return {
        label: configuration.displayName,
        passwordAllowed: !configuration.requireSso,
        passwordForPrivileged: configuration.requireSso && await ssoRefusesSomePrivilegedUser(database.em(), accountId, saved),
      };
    },

    async acceptsPasswordOf(accountId, userId) {
      const configuration = await service().show(accountId);
      if (!configuration?.requireSso) return true;
      return ssoRefusesPrivilegedUser(database.em(), accountId, userId, { userId: configuration.savedByUserId, ownerRights: configuration.savedWithOwnerRights });
    },

    async begin({ interactionUid, accountId, loginHint }, res) {
      const settings = await requiredSettings(accountId);
      const state = newSecretToken(32);
      const browser = newSecretToken(32);
      const trip = { state_digest: digestSecret(state), browser_digest: digestSecret(browser), account_id: accountId, interaction_uid: interactionUid, protocol: settings.protocol, oidc_nonce: null as string | null, oidc_code_verifier_sealed: null as string | null, saml_request_id: null as string | null };
      let url: string;
      if (settings.oidc) {
        const config = await oidcConfiguration(settings.oidc);
        const verifier = oidc.randomPKCECodeVerifier();
        trip.oidc_nonce = oidc.randomNonce();
        trip.oidc_code_verifier_sealed = verifierSealer.seal(verifier);
        url = oidc.buildAuthorizationUrl(config, {
          redirect_uri: oidcRedirectUri(apiUrl),
          scope: 'openid email profile',
          state,
          nonce: trip.oidc_nonce,
          code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
          code_challenge_method: 'S256',
          ...(loginHint ? { login_hint: loginHint } : {}),
        }).href;
      } else {
        let requestId: string | null = null;
        const capture: CacheProvider = {
          saveAsync: async (key, value) => { requestId = key; return { value, createdAt: Date.now() }; },
          getAsync: async () => null,
          removeAsync: async () => null,
        };
        url = await samlFor(accountId, settings.saml!, capture).getAuthorizeUrlAsync(state, undefined, {});
        if (!requestId) throw new Error('the SAML request got no id');
        trip.saml_request_id = requestId;
      }
      const em = database.em();
      await database.transactions.run(em, async (tx) => {
        await tx.execute('delete from sso_round_trips where expires_at < now()');
        await tx.execute(
          `insert into sso_round_trips (state_digest, browser_digest, account_id, interaction_uid, protocol, oidc_nonce, oidc_code_verifier_sealed, saml_request_id, expires_at)
           values (?, ?, ?, ?, ?, ?, ?, ?, now() + make_interval(secs => ?))`,
          [trip.state_digest, trip.browser_digest, trip.account_id, trip.interaction_uid, trip.protocol, trip.oidc_nonce, trip.oidc_code_verifier_sealed, trip.saml_request_id, ROUND_TRIP_SECONDS],
        );
      }, 'sso.begin');
      res.cookie(BROWSER_COOKIE, browser, { httpOnly: true, sameSite: 'lax', secure: secureCookies, path: BROWSER_COOKIE_PATH, maxAge: ROUND_TRIP_SECONDS * 1000 });
      return url;
    },

    returnRoutes(router: Router, finisher: InteractionFinisher) {
      router.get(SSO_PATHS.oidcCallback, deps.limitPerAddress, returnStep('oidc', (req) => takeRoundTrip(req, req.query.state, 'oidc'), async (req, res, trip) => {
        const identity = await verified(async () => {
          if (typeof req.query.error === 'string') throw new Refusal(REFUSED, 403, 'the provider answered with an error');
          const settings = await requiredSettings(trip.account_id);
          if (!settings.oidc || !trip.oidc_code_verifier_sealed || !trip.oidc_nonce) throw new Refusal(REFUSED, 401, 'the provider changed since the round trip began');
          const query = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?')) : '';
          const currentUrl = new URL(`${oidcRedirectUri(apiUrl)}${query}`);
          const tokens = await oidc.authorizationCodeGrant(await oidcConfiguration(settings.oidc), currentUrl, {
            pkceCodeVerifier: verifierSealer.unseal(trip.oidc_code_verifier_sealed),
            expectedState: String(req.query.state),
            expectedNonce: trip.oidc_nonce,
            idTokenExpected: true,
          });
          const claims = tokens.claims();
          if (!claims || typeof claims.sub !== 'string' || typeof claims.iss !== 'string') throw new Refusal(REFUSED, 401, 'the ID token names no subject');
          // Entra ID says "verified" as xms_edov (email domain owner verified), not email_verified.
          // Only a verified email may link a user on a first sign-in; the subject is who it is after.
          const verifiedEmail = claims.email_verified === true || claims.xms_edov === true;
          return { issuer: claims.iss, subject: claims.sub, email: verifiedEmail ? assertedEmail(claims.email) : undefined, name: typeof claims.name === 'string' ? claims.name : undefined };
        });
        await signInWith(req, trip, identity, finisher, res);
      }, finisher.problem));

      // The identity provider posts its answer from its own page (cross-site: no SameSite=Lax cookie
      // comes with it). It is verified and kept with the round trip; the browser is then sent to
      // continue it with a top-level GET, which carries the cookie of the browser that began it.
      router.post(
        SSO_PATHS.samlAssertionConsumer,
        deps.limitPerAddress,
        express.urlencoded({ extended: false, limit: '512kb', parameterLimit: 10 }),
        returnStep('saml', (req) => claimSamlAnswer(req.body?.RelayState), async (req, res, trip) => {
          const identity = await verified(async () => {
            const settings = await requiredSettings(trip.account_id);
            const response = req.body?.SAMLResponse;
            if (!settings.saml || !trip.saml_request_id || typeof response !== 'string') throw new Refusal(REFUSED, 401, 'no SAML response for this round trip');
            // InResponseTo must be the request this round trip sent, and nothing else. The library
            // reads the value as the request's instant; the round trip's own expiry already bounds it.
            const expected: CacheProvider = {
              saveAsync: async () => null,
              getAsync: async (key) => (key === trip.saml_request_id ? new Date().toISOString() : null),
              removeAsync: async () => null,
            };
            const { profile } = await samlFor(trip.account_id, settings.saml, expected).validatePostResponseAsync({ SAMLResponse: response });
            // The library checks the issuer of logout messages only: the assertion's is checked here.
            if (!profile || profile.issuer !== settings.saml.idpEntityId) throw new Refusal(REFUSED, 401, 'the assertion is from another issuer');
            const name = typeof profile.displayName === 'string' ? profile.displayName : undefined;
            if (profile.nameIDFormat === EMAIL_NAME_ID) return { issuer: profile.issuer, subject: profile.nameID, email: assertedEmail(profile.nameID), name };
            if (profile.nameIDFormat === PERSISTENT_NAME_ID && profile.nameID) {
              const attribute = profile.email ?? profile.mail ?? profile[EMAIL_CLAIM];
              return { issuer: profile.issuer, subject: profile.nameID, email: attribute === undefined ? undefined : assertedEmail(attribute), name };
            }
            throw new Refusal(REFUSED, 401, 'the assertion names neither a persistent subject nor an email');
          });
          await database.em().execute('update sso_round_trips set saml_identity_sealed = ? where state_digest = ?', [identitySealer.seal(JSON.stringify(identity)), trip.state_digest]);
          res.redirect(303, `${SSO_PATHS.samlContinue}?${new URLSearchParams({ RelayState: String(req.body.RelayState) })}`);
        }, finisher.problem),
      );

      router.get(SSO_PATHS.samlContinue, deps.limitPerAddress, returnStep('saml', (req) => takeRoundTrip(req, req.query.RelayState, 'saml'), async (req, res, trip) => {
        if (!trip.saml_identity_sealed) throw new Refusal(REFUSED, 401, 'the SAML answer was not accepted');
        await signInWith(req, trip, JSON.parse(identitySealer.unseal(trip.saml_identity_sealed)) as AssertedIdentity, finisher, res);
      }, finisher.problem));
    },
  };
}
