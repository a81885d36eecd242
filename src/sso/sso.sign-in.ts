import { recordChange } from '../db/change-journal.js';
import express, { type Request, type Response, type Router } from 'express';
import type { HttpRouteDeps } from '../app/feature.js';
import { newSecretToken } from '../auth/secrets.js';
import type { InteractionFinisher, SignInMethod } from '../auth/sign-in-method.js';
import { NotFoundError } from '../errors/domain-errors.js';
import { SSO_PATHS } from './sso.endpoints.js';
import { ssoRefusesPrivilegedUser, ssoRefusesSomePrivilegedUser, userForAssertedIdentity, type AssertedIdentity } from './sso.matching.js';
import { OidcClient } from './sso.oidc-client.js';
import { EXPIRED, NO_ACCESS, PRIVILEGED, REFUSED, Refusal } from './sso.refusals.js';
import { RoundTripStore, clearBrowserCookie, setBrowserCookie, type RoundTrip } from './sso.round-trips.js';
import { SamlClient } from './sso.saml-client.js';
import { SsoService, ssoSecretSealer, type SsoSettings } from './sso.service.js';

/** What every step of the sign-in shares: built once per sign-in method. */
interface SsoSignIn {
  deps: HttpRouteDeps;
  service: () => SsoService;
  oidc: OidcClient;
  saml: SamlClient;
  roundTrips: RoundTripStore;
  secureCookies: boolean;
}

type ReturnStep = (req: Request, res: Response, trip: RoundTrip) => Promise<void>;

async function requiredSettings(sso: SsoSignIn, accountId: string): Promise<SsoSettings> {
  const settings = await sso.service().settings(accountId);
  if (!settings) throw new NotFoundError('single sign-on configuration');
  return settings;
}

/** The sign-in's writes as the audit trail sees them: a browser at this address, acting as `userId` once known. */
function browserWrites(sso: SsoSignIn, req: Request, res: Response, userId?: string) {
  return sso.deps.database.transactions.onBehalfOf({
    face: 'oauth',
    requestId: res.locals.requestId as string | undefined,
    remoteAddress: req.ip,
    description: `${req.method} ${req.path}`,
    ...(userId ? { actor: { type: 'user', id: userId } } : {}),
  });
}

/** A refused answer for a known round trip is the account's failed sign-in (the provider named, no assertion kept). */
async function recordRefusal(sso: SsoSignIn, req: Request, res: Response, trip: RoundTrip, reason: string, userId?: string): Promise<void> {
  await browserWrites(sso, req, res).run(sso.deps.database.em(), async (tx) => {
    recordChange(tx, {
      accountId: trip.account_id,
      action: 'sign_in_failed',
      resource: { type: 'account', id: trip.account_id },
      ...(userId ? { userId } : {}),
      fields: [{ name: 'single_sign_on', value: reason.slice(0, 200) }],
    });
  }, 'sso.sign-in-refused');
}

/** Signs in the user the verified identity matches (recorded as their sign-in) and sends the browser back to the interaction. */
async function signInWith(sso: SsoSignIn, req: Request, trip: RoundTrip, identity: AssertedIdentity, finisher: InteractionFinisher, res: Response): Promise<void> {
  const settings = await requiredSettings(sso, trip.account_id).catch(() => { throw new Refusal(REFUSED, 401, 'the account has no provider any more'); });
  const em = sso.deps.database.em();
  const match = await browserWrites(sso, req, res).run(em, async (tx) => {
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
  clearBrowserCookie(res);
  const resumeAt = await finisher.signedIn(trip.interaction_uid, trip.account_id, userId, settings.displayName);
  if (!resumeAt) throw new Refusal(EXPIRED, 400, 'the interaction no longer waits for a sign-in');
  sso.deps.logger.info({ accountId: trip.account_id, userId, protocol: settings.protocol, provider: settings.displayName }, 'single sign-on');
  res.redirect(303, resumeAt);
}

/**
 * One step of the way back from the provider: `take` finds the round trip (refusing an unknown,
 * used or another browser's one), `step` does the rest. A refusal shows the page that says so and,
 * when it names a round trip, is the account's failed sign-in.
 */
function returnStep(sso: SsoSignIn, protocol: 'oidc' | 'saml', take: (req: Request) => Promise<RoundTrip>, step: ReturnStep, problem: InteractionFinisher['problem']) {
  return async (req: Request, res: Response) => {
    let trip: RoundTrip | undefined;
    try {
      trip = await take(req);
      await step(req, res, trip);
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      trip ??= (error as Refusal & { trip?: RoundTrip }).trip;
      sso.deps.logger.warn({ protocol, reason: error.message }, 'single sign-on refused');
      // Unknown, expired and replayed states name no account: nothing to record them against.
      if (trip) await recordRefusal(sso, req, res, trip, `${protocol}: ${error.about?.audited ?? error.page[0]}`, error.about?.userId);
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

/** Starts the round trip: the provider's URL for it, the round trip stored, and the browser given its cookie. */
async function beginRoundTrip(sso: SsoSignIn, { interactionUid, accountId, loginHint }: Parameters<SignInMethod['begin']>[0], res: Response): Promise<string> {
  const settings = await requiredSettings(sso, accountId);
  const state = newSecretToken(32);
  const browser = newSecretToken(32);
  const trip = { state, browser, accountId, interactionUid, protocol: settings.protocol };
  let url: string;
  if (settings.oidc) {
    const request = await sso.oidc.authorizationRequest(settings.oidc, state, loginHint);
    url = request.url;
    await sso.roundTrips.create({ ...trip, oidc: { nonce: request.nonce, codeVerifier: request.codeVerifier } });
  } else {
    const request = await sso.saml.authorizationRequest(accountId, settings.saml!, state);
    url = request.url;
    await sso.roundTrips.create({ ...trip, samlRequestId: request.requestId });
  }
  setBrowserCookie(res, browser, sso.secureCookies);
  return url;
}

/** The OIDC provider's redirect back: the code exchanged and the ID token checked, then the sign-in. */
function oidcCallbackStep(sso: SsoSignIn, finisher: InteractionFinisher): ReturnStep {
  return async (req, res, trip) => {
    const identity = await verified(async () => {
      if (typeof req.query.error === 'string') throw new Refusal(REFUSED, 403, 'the provider answered with an error');
      const settings = await requiredSettings(sso, trip.account_id);
      if (!settings.oidc || !trip.oidc_code_verifier_sealed || !trip.oidc_nonce) throw new Refusal(REFUSED, 401, 'the provider changed since the round trip began');
      return sso.oidc.identityFromCallback(settings.oidc, {
        originalUrl: req.originalUrl,
        state: String(req.query.state),
        nonce: trip.oidc_nonce,
        codeVerifier: sso.roundTrips.unsealCodeVerifier(trip.oidc_code_verifier_sealed),
      });
    });
    await signInWith(sso, req, trip, identity, finisher, res);
  };
}

/**
 * The identity provider posts its answer from its own page (cross-site: no SameSite=Lax cookie
 * comes with it). It is verified and kept with the round trip; the browser is then sent to
 * continue it with a top-level GET, which carries the cookie of the browser that began it.
 */
function samlAnswerStep(sso: SsoSignIn): ReturnStep {
  return async (req, res, trip) => {
    const identity = await verified(async () => {
      const settings = await requiredSettings(sso, trip.account_id);
      const response = req.body?.SAMLResponse;
      if (!settings.saml || !trip.saml_request_id || typeof response !== 'string') throw new Refusal(REFUSED, 401, 'no SAML response for this round trip');
      return sso.saml.identityFromAnswer(trip.account_id, settings.saml, trip.saml_request_id, response);
    });
    await sso.roundTrips.keepSamlIdentity(trip, identity);
    res.redirect(303, `${SSO_PATHS.samlContinue}?${new URLSearchParams({ RelayState: String(req.body.RelayState) })}`);
  };
}

/** The browser that began the round trip continues it: the kept SAML identity signs the user in. */
function samlContinueStep(sso: SsoSignIn, finisher: InteractionFinisher): ReturnStep {
  return async (req, res, trip) => {
    const identity = sso.roundTrips.samlIdentityOf(trip);
    if (!identity) throw new Refusal(REFUSED, 401, 'the SAML answer was not accepted');
    await signInWith(sso, req, trip, identity, finisher, res);
  };
}

/**
 * Single sign-on as a sign-in method of the authorization server: the round trip to the account's
 * identity provider (OIDC with PKCE, state and nonce; SAML with RelayState and InResponseTo), each
 * bound to one interaction and usable once, and the verified identity matched to a user.
 */
export function ssoSignInMethod(deps: HttpRouteDeps): SignInMethod {
  const { database } = deps;
  const apiUrl = deps.runtime.urls.api;
  const sealer = ssoSecretSealer(deps.runtime.serverSecret);
  const sso: SsoSignIn = {
    deps,
    service: () => new SsoService(database.em(), database.transactions, sealer),
    oidc: new OidcClient(apiUrl, deps.runtime.production),
    saml: new SamlClient(apiUrl),
    roundTrips: new RoundTripStore(database, deps.runtime.serverSecret),
    secureCookies: new URL(apiUrl).protocol === 'https:',
  };

  return {
    name: 'sso',

    async offerFor(accountId) {
      const configuration = await sso.service().show(accountId);
      if (!configuration) return undefined;
      const saved = { userId: configuration.savedByUserId, ownerRights: configuration.savedWithOwnerRights };
      return {
        label: configuration.displayName,
        passwordAllowed: !configuration.requireSso,
        passwordForPrivileged: configuration.requireSso && await ssoRefusesSomePrivilegedUser(database.em(), accountId, saved),
      };
    },

    async acceptsPasswordOf(accountId, userId) {
      const configuration = await sso.service().show(accountId);
      if (!configuration?.requireSso) return true;
      return ssoRefusesPrivilegedUser(database.em(), accountId, userId, { userId: configuration.savedByUserId, ownerRights: configuration.savedWithOwnerRights });
    },

    begin: (request, res) => beginRoundTrip(sso, request, res),

    returnRoutes(router: Router, finisher: InteractionFinisher) {
      const { problem } = finisher;
      router.get(SSO_PATHS.oidcCallback, deps.limitPerAddress, returnStep(sso, 'oidc', (req) => sso.roundTrips.take(req, req.query.state, 'oidc'), oidcCallbackStep(sso, finisher), problem));
      router.post(
        SSO_PATHS.samlAssertionConsumer,
        deps.limitPerAddress,
        express.urlencoded({ extended: false, limit: '512kb', parameterLimit: 10 }),
        returnStep(sso, 'saml', (req) => sso.roundTrips.claimSamlAnswer(req.body?.RelayState), samlAnswerStep(sso), problem),
      );
      router.get(SSO_PATHS.samlContinue, deps.limitPerAddress, returnStep(sso, 'saml', (req) => sso.roundTrips.take(req, req.query.RelayState, 'saml'), samlContinueStep(sso, finisher), problem));
    },
  };
}
