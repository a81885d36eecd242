import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type Provider from 'oidc-provider';
import { errors, type InteractionResults } from 'oidc-provider';
import type { Database } from '../db/database.js';
import type { SignInMethod } from '../auth/sign-in-method.js';
import { recordChange } from '../db/change-journal.js';
import type { TransactionRunner } from '../db/transaction.js';
import { deriveKey } from '../auth/server-secret.js';
import { hmac, safeEqual } from '../auth/secrets.js';
import type { Logger } from '../logging/logger.js';
import { recordGrantDelegation } from '../oauth-delegations/oauth-delegation.service.js';
import { USER_FIELD_LIMITS } from '../users/user.validation.js';
import { delegationTypeFor, findApp } from './apps.service.js';
import type { OAuthApp } from './oauth-app.entity.js';
import { consentPage, continuePage, problemPage, signInPage } from './pages.js';
import { PASSWORD_MAX_LENGTH, checkSignIn } from './passwords.js';
import { alternativeSignIn } from './sign-in-methods.js';
import { signedInResult } from './sign-in-result.js';
import { INTERACTION_PATH, LIFETIMES } from './provider.js';
import { DEFAULT_SIGN_IN_LIMITS, beginSignInAttempt, type SignInLimits } from './sign-in-limiter.js';
import { ACTIVE_USER, LIVE_USER } from '../users/user.sql.js';

type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;

const WRONG_CREDENTIALS = 'The email or password is not correct.';
const TOO_MANY_ATTEMPTS = 'Too many sign-in attempts. Wait a few minutes, then try again.';

function sendPage(res: Response, status: number, html: string): void {
  res.status(status).set({
    'Content-Type': 'text/html; charset=utf-8',
    'Cache-Control': 'no-store',
    // No script, no framing (clickjacking a consent button), nothing loaded from elsewhere.
    'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
  }).send(html);
}

/** The sign-in pages' writes: made by the browser's session (the user signing in, once known), from the client's address. */
function pageWrites(database: Database, req: Request, res: Response, userId?: string): TransactionRunner {
  return database.transactions.onBehalfOf({
    face: 'oauth',
    requestId: res.locals.requestId as string | undefined,
    remoteAddress: req.ip,
    description: `${req.method} ${req.route?.path ?? req.path}`,
    ...(userId ? { actor: { type: 'user', id: userId } } : {}),
  });
}

/**
 * A sign-in or a failed one, as a write of its own: the user whose email was given (when one
 * matches; a failure names no email, which may hold a mistyped password), else the app.
 */
async function recordSignIn(database: Database, req: Request, res: Response, attempt: { app: OAuthApp; email: string; userId?: string }): Promise<void> {
  const em = database.em();
  const [match] = attempt.userId || !attempt.email
    ? []
    : await em.execute<{ id: string }[]>(`select id from users where account_id = ? and lower(email) = lower(?) and ${LIVE_USER}`, [attempt.app.account.id, attempt.email]);
  const userId = attempt.userId ?? match?.id;
  await pageWrites(database, req, res, attempt.userId).run(em, async (tx) => {
    recordChange(tx, {
      accountId: attempt.app.account.id,
      action: attempt.userId ? 'sign_in' : 'sign_in_failed',
      resource: userId ? { type: 'user', id: userId } : { type: 'app', id: attempt.app.clientId, summary: attempt.app.name },
      ...(userId ? { userId } : {}),
      fields: [{ name: 'client_id', value: attempt.app.clientId }],
    });
  }, attempt.userId ? 'oauthServer.signIn' : 'oauthServer.signInFailed');
}

function first(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

interface InteractionRouteDeps {
  database: Database;
  serverSecret: Buffer;
  logger: Logger;
  provider: () => Promise<Provider>;
  signInLimits?: SignInLimits;
  signInMethods?: readonly SignInMethod[];
}

type InteractionHandler = (req: Request, res: Response, provider: Provider, interaction: Interaction, app: OAuthApp) => Promise<void>;

/** What the interaction pages share: the CSRF token bound to each interaction, the attempt limits, the other sign-in methods. */
interface InteractionPages {
  deps: InteractionRouteDeps;
  csrfFor(uid: string): string;
  csrfValid(uid: string, given: unknown): boolean;
  limits: SignInLimits;
  alternative: ReturnType<typeof alternativeSignIn>;
}

/**
 * Runs `handler` with the request's interaction and its app: an unknown or disabled app, and an
 * interaction that expired or belongs to another browser, get a problem page instead.
 */
function withInteraction(deps: InteractionRouteDeps, handler: InteractionHandler) {
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      const provider = await deps.provider();
      const interaction = await provider.interactionDetails(req, res);
      const app = await findApp(deps.database.em(), String(interaction.params.client_id ?? ''));
      if (!app) return sendPage(res, 400, problemPage('Unknown app', 'The app that sent you here is no longer registered.'));
      // Disabled while its sign-in page was open: nothing is approved for it (its flows fail, as every other of its requests).
      if (app.disabledAt !== null) return sendPage(res, 403, problemPage('App disabled', 'The app that sent you here has been disabled by your administrator.'));
      await handler(req, res, provider, interaction, app);
    } catch (error) {
      if (error instanceof errors.SessionNotFound || error instanceof errors.InvalidRequest) {
        return sendPage(res, 400, problemPage('Sign-in expired', 'This sign-in page has expired or was opened in another browser. Go back to the app and start again.'));
      }
      next(error);
    }
  };
}

async function finish(req: Request, res: Response, provider: Provider, result: InteractionResults, merge = false): Promise<void> {
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: merge });
}

/** Creates (or widens) the grant and records it as the user's delegation, then lets the flow resume. */
async function approve(pages: InteractionPages, req: Request, res: Response, provider: Provider, interaction: Interaction, app: OAuthApp): Promise<void> {
  const { database } = pages.deps;
  const userId = interaction.session?.accountId;
  if (!userId) throw new errors.SessionNotFound('no signed-in user for this interaction');
  const em = database.em();
  const [member] = await em.execute<{ id: string }[]>(`select id from users where id = ? and account_id = ? and ${ACTIVE_USER}`, [userId, app.account.id]);
  if (!member) {
    return finish(req, res, provider, { error: 'access_denied', error_description: 'The signed-in user is not a member of the account that owns this app.' });
  }
  const existing = interaction.grantId ? await provider.Grant.find(interaction.grantId) : undefined;
  const lifetime = app.kind === 'spa' ? LIFETIMES.browserSignIn : LIFETIMES.grant;
  // The library takes `expiresIn` at construction (it is not in its typings); an existing grant keeps its expiry.
  const grant = existing ?? new provider.Grant({ accountId: userId, clientId: app.clientId, expiresIn: lifetime } as ConstructorParameters<typeof provider.Grant>[0]);
  const missing = interaction.prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[]; missingResourceScopes?: Record<string, string[]> };
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  const resources = Object.keys(missing.missingResourceScopes ?? {});
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) grant.addResourceScope(indicator, scopes.join(' '));
  const grantId = await grant.save();
  const scopes = [
    ...(grant.getOIDCScope()?.split(' ') ?? []),
    ...resources.flatMap((indicator) => grant.getResourceScope(indicator)?.split(' ') ?? []),
  ].filter(Boolean);
  await pageWrites(database, req, res, userId).run(em, (tx) => recordGrantDelegation(tx, {
    accountId: app.account.id,
    userId,
    type: delegationTypeFor(app.kind),
    clientId: app.clientId,
    clientName: app.name,
    scopes: [...new Set(scopes)],
    grantId,
    expiresAt: new Date(Date.now() + lifetime * 1000),
  }), 'oauthServer.consent');
  await finish(req, res, provider, { consent: existing ? {} : { grantId } }, true);
}

function hostOf(uri: string): string {
  try {
    return new URL(uri).host || uri;
  } catch {
    return uri;
  }
}

/**
 * The consent step: the first-party web app is approved at once; the mobile and browser apps only
 * right after the user signed in in this flow, else the user confirms; any other app (a third
 * party's) shows the user the scopes it is missing.
 */
async function consentStep(pages: InteractionPages, req: Request, res: Response, provider: Provider, interaction: Interaction, app: OAuthApp): Promise<void> {
  const action = `${INTERACTION_PATH}/${interaction.uid}/consent`;
  if (app.kind === 'web') return approve(pages, req, res, provider, interaction, app);
  // A public client proves nothing about who started the flow: another app on the device can use
  // the mobile app's client id (and a loopback port of its own). Unless the user signed in during
  // this very flow, they confirm it (RFC 8252, section 8.6).
  if (app.kind === 'mobile' || app.kind === 'spa') {
    if (interaction.lastSubmission?.login) return approve(pages, req, res, provider, interaction, app);
    const [user] = await pages.deps.database.em().execute<{ email: string }[]>(`select email from users where id = ? and ${LIVE_USER}`, [interaction.session?.accountId ?? '']);
    return sendPage(res, 200, continuePage({ action, csrf: pages.csrfFor(interaction.uid), appName: app.name, email: user?.email ?? '' }));
  }
  const missing = interaction.prompt.details as { missingOIDCScope?: string[]; missingResourceScopes?: Record<string, string[]> };
  const scopes = [...new Set([...(missing.missingOIDCScope ?? []), ...Object.values(missing.missingResourceScopes ?? {}).flat()])];
  // Where the answer goes and who put the app here: an app named like the product's own shows its real host and its registrar.
  const redirectHost = hostOf(String(interaction.params.redirect_uri ?? ''));
  const [registrar] = app.registeredByUserId
    ? await pages.deps.database.em().execute<{ name: string; email: string }[]>('select name, email from users where id = ?', [app.registeredByUserId])
    : [];
  return sendPage(res, 200, consentPage({ action, csrf: pages.csrfFor(interaction.uid), appName: app.name, scopes, redirectHost, registeredBy: registrar ? `${registrar.name} <${registrar.email}>` : undefined }));
}

/** GET of the interaction's page: the sign-in form or the consent step, whichever the flow waits for. */
function showInteraction(pages: InteractionPages): InteractionHandler {
  return async (req, res, provider, interaction, app) => {
    if (interaction.prompt.name === 'login') {
      return sendPage(res, 200, signInPage({ action: `${INTERACTION_PATH}/${interaction.uid}/login`, csrf: pages.csrfFor(interaction.uid), appName: app.name, alternative: await pages.alternative.offer(interaction.uid, app.account.id) }));
    }
    if (interaction.prompt.name === 'consent') return consentStep(pages, req, res, provider, interaction, app);
    return sendPage(res, 400, problemPage('Sign-in problem', 'This step of the sign-in is not supported.'));
  };
}

/** The sign-in form's post: the email and password checked under the attempt limits, the attempt recorded either way. */
function signInWithPassword(pages: InteractionPages): InteractionHandler {
  const { deps, alternative } = pages;
  return async (req, res, provider, interaction, app) => {
    if (interaction.prompt.name !== 'login' || !pages.csrfValid(interaction.uid, req.body?.csrf)) {
      return sendPage(res, 400, problemPage('Sign-in expired', 'This sign-in form is no longer valid. Go back to the app and start again.'));
    }
    const email = first(req.body?.email).trim().slice(0, USER_FIELD_LIMITS.email.max);
    const password = first(req.body?.password).slice(0, PASSWORD_MAX_LENGTH);
    const offer = await alternative.offer(interaction.uid, app.account.id);
    const page = (status: number, error: string) =>
      sendPage(res, status, signInPage({ action: `${INTERACTION_PATH}/${interaction.uid}/login`, csrf: pages.csrfFor(interaction.uid), appName: app.name, email, error, alternative: offer }));
    // When the account requires its other method, a password signs in only an owner or admin that
    // method may not sign in (a configuration an admin saved must not lock the owner out). Every
    // other refusal reads the same, so the answer tells nobody whether a member's password was right.
    const passwordsRefused = offer !== undefined && !offer.passwordAllowed;
    const em = deps.database.em();
    const attempt = await beginSignInAttempt(em, email, req.ip ?? 'unknown', pages.limits);
    if (!attempt.allowed) {
      deps.logger.warn({ clientId: app.clientId }, 'sign-in attempts over the limit');
      res.set('Retry-After', String(attempt.retryAfterSeconds));
      return page(429, TOO_MANY_ATTEMPTS);
    }
    const verified = email && password ? await checkSignIn(em, app.account.id, email, password) : undefined;
    const userId = verified && (!passwordsRefused || (await alternative.passwordAccepted(app.account.id, verified))) ? verified : undefined;
    await recordSignIn(deps.database, req, res, { app, email, userId });
    if (!userId && passwordsRefused) {
      const privileged = offer.passwordForPrivileged ? ' An owner or administrator it cannot sign in yet signs in with their correct email and password.' : '';
      return page(403, `Passwords are not accepted here: sign in with ${offer.label}.${privileged}`);
    }
    if (!userId) return page(401, WRONG_CREDENTIALS);
    await attempt.succeeded();
    await finish(req, res, provider, signedInResult(userId, { method: 'password' }));
  };
}

/** The consent form's post: approved, or the flow ends with access_denied. */
function answerConsent(pages: InteractionPages): InteractionHandler {
  return async (req, res, provider, interaction, app) => {
    if (interaction.prompt.name !== 'consent' || !pages.csrfValid(interaction.uid, req.body?.csrf)) {
      return sendPage(res, 400, problemPage('Sign-in expired', 'This consent form is no longer valid. Go back to the app and start again.'));
    }
    if (req.body?.decision !== 'approve') {
      return finish(req, res, provider, { error: 'access_denied', error_description: 'The user did not allow the app.' });
    }
    await approve(pages, req, res, provider, interaction, app);
  };
}

/**
 * The account-side half of the flows: the sign-in form, the consent form for third-party apps, and
 * the grant each consent makes (recorded as the user's delegation). The first-party web app skips
 * consent; the mobile app (a public client) skips it only right after the user signed in in the
 * same flow, and otherwise asks the user to confirm. Forms post back to the interaction's own URL, whose cookie is SameSite=Lax and
 * path-bound, and carry a token bound to the interaction (CSRF).
 */
export function interactionRoutes(router: Router, deps: InteractionRouteDeps): void {
  const csrfKey = deriveKey(deps.serverSecret, 'oauth-server:csrf');
  const csrfFor = (uid: string) => hmac(csrfKey, uid).toString('base64url');
  const csrfValid = (uid: string, given: unknown) => typeof given === 'string' && safeEqual(Buffer.from(given), Buffer.from(csrfFor(uid)));
  const form = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 10 });
  const alternative = alternativeSignIn(deps.signInMethods ?? [], { csrfFor, csrfValid, sendPage, form, database: deps.database, provider: deps.provider });
  const pages: InteractionPages = { deps, csrfFor, csrfValid, limits: deps.signInLimits ?? DEFAULT_SIGN_IN_LIMITS, alternative };
  const interactionStep = (handler: InteractionHandler) => withInteraction(deps, handler);

  router.get(`${INTERACTION_PATH}/:uid`, interactionStep(showInteraction(pages)));
  router.post(`${INTERACTION_PATH}/:uid/login`, form, interactionStep(signInWithPassword(pages)));
  alternative.mount(router, interactionStep);
  router.post(`${INTERACTION_PATH}/:uid/consent`, form, interactionStep(answerConsent(pages)));
}
