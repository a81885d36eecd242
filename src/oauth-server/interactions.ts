import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type Provider from 'oidc-provider';
import { errors, type InteractionResults } from 'oidc-provider';
import type { Database } from '../db/database.js';
import { deriveKey } from '../auth/server-secret.js';
import { hmac, safeEqual } from '../auth/secrets.js';
import type { Logger } from '../logging/logger.js';
import { recordGrantDelegation } from '../oauth-delegations/oauth-delegation.service.js';
import { USER_FIELD_LIMITS } from '../users/user.validation.js';
import { delegationTypeFor, findApp } from './apps.service.js';
import type { OAuthApp } from './oauth-app.entity.js';
import { consentPage, problemPage, signInPage } from './pages.js';
import { PASSWORD_MAX_LENGTH, checkSignIn } from './passwords.js';
import { INTERACTION_PATH, LIFETIMES } from './provider.js';
import { DEFAULT_SIGN_IN_LIMITS, allowSignInAttempt, type SignInLimits } from './sign-in-limiter.js';

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

function first(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/**
 * The account-side half of the flows: the sign-in form, the consent form for third-party apps, and
 * the grant each consent makes (recorded as the user's delegation). First-party apps (mobile, web)
 * skip consent. Forms post back to the interaction's own URL, whose cookie is SameSite=Lax and
 * path-bound, and carry a token bound to the interaction (CSRF).
 */
export function interactionRoutes(router: Router, deps: { database: Database; serverSecret: Buffer; logger: Logger; provider: () => Promise<Provider>; signInLimits?: SignInLimits }): void {
  const csrfKey = deriveKey(deps.serverSecret, 'oauth-server:csrf');
  const csrfFor = (uid: string) => hmac(csrfKey, uid).toString('base64url');
  const csrfValid = (uid: string, given: unknown) => typeof given === 'string' && safeEqual(Buffer.from(given), Buffer.from(csrfFor(uid)));
  const limits = deps.signInLimits ?? DEFAULT_SIGN_IN_LIMITS;
  const form = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 10 });

  const withInteraction = (handler: (req: Request, res: Response, provider: Provider, interaction: Interaction, app: OAuthApp) => Promise<void>) =>
    async (req: Request, res: Response, next: NextFunction) => {
      try {
        const provider = await deps.provider();
        const interaction = await provider.interactionDetails(req, res);
        const app = await findApp(deps.database.em(), String(interaction.params.client_id ?? ''));
        if (!app) return sendPage(res, 400, problemPage('Unknown app', 'The app that sent you here is no longer registered.'));
        await handler(req, res, provider, interaction, app);
      } catch (error) {
        if (error instanceof errors.SessionNotFound || error instanceof errors.InvalidRequest) {
          return sendPage(res, 400, problemPage('Sign-in expired', 'This sign-in page has expired or was opened in another browser. Go back to the app and start again.'));
        }
        next(error);
      }
    };

  /** Creates (or widens) the grant and records it as the user's delegation, then lets the flow resume. */
  async function approve(req: Request, res: Response, provider: Provider, interaction: Interaction, app: OAuthApp): Promise<void> {
    const userId = interaction.session?.accountId;
    if (!userId) throw new errors.SessionNotFound('no signed-in user for this interaction');
    const em = deps.database.em();
    const [member] = await em.execute<{ id: string }[]>('select id from users where id = ? and account_id = ? and deleted_at is null and suspended_at is null', [userId, app.account.id]);
    if (!member) {
      return finish(req, res, provider, { error: 'access_denied', error_description: 'The signed-in user is not a member of the account that owns this app.' });
    }
    const existing = interaction.grantId ? await provider.Grant.find(interaction.grantId) : undefined;
    const grant = existing ?? new provider.Grant({ accountId: userId, clientId: app.clientId });
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
    await recordGrantDelegation(em, {
      accountId: app.account.id,
      userId,
      type: delegationTypeFor(app.kind),
      clientId: app.clientId,
      clientName: app.name,
      scopes: [...new Set(scopes)],
      grantId,
      expiresAt: new Date(Date.now() + LIFETIMES.grant * 1000),
    });
    await finish(req, res, provider, { consent: existing ? {} : { grantId } }, true);
  }

  async function finish(req: Request, res: Response, provider: Provider, result: InteractionResults, merge = false): Promise<void> {
    await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: merge });
  }

  router.get(`${INTERACTION_PATH}/:uid`, withInteraction(async (req, res, provider, interaction, app) => {
    const action = `${INTERACTION_PATH}/${interaction.uid}`;
    if (interaction.prompt.name === 'login') {
      return sendPage(res, 200, signInPage({ action: `${action}/login`, csrf: csrfFor(interaction.uid), appName: app.name }));
    }
    if (interaction.prompt.name === 'consent') {
      if (app.kind !== 'third_party') return approve(req, res, provider, interaction, app);
      const missing = interaction.prompt.details as { missingOIDCScope?: string[]; missingResourceScopes?: Record<string, string[]> };
      const scopes = [...new Set([...(missing.missingOIDCScope ?? []), ...Object.values(missing.missingResourceScopes ?? {}).flat()])];
      return sendPage(res, 200, consentPage({ action: `${action}/consent`, csrf: csrfFor(interaction.uid), appName: app.name, scopes }));
    }
    return sendPage(res, 400, problemPage('Sign-in problem', 'This step of the sign-in is not supported.'));
  }));

  router.post(`${INTERACTION_PATH}/:uid/login`, form, withInteraction(async (req, res, provider, interaction, app) => {
    if (interaction.prompt.name !== 'login' || !csrfValid(interaction.uid, req.body?.csrf)) {
      return sendPage(res, 400, problemPage('Sign-in expired', 'This sign-in form is no longer valid. Go back to the app and start again.'));
    }
    const email = first(req.body?.email).trim().slice(0, USER_FIELD_LIMITS.email.max);
    const password = first(req.body?.password).slice(0, PASSWORD_MAX_LENGTH);
    const page = (status: number, error: string) =>
      sendPage(res, status, signInPage({ action: `${INTERACTION_PATH}/${interaction.uid}/login`, csrf: csrfFor(interaction.uid), appName: app.name, email, error }));
    const em = deps.database.em();
    if (!(await allowSignInAttempt(em, email, req.ip ?? 'unknown', limits))) {
      deps.logger.warn({ clientId: app.clientId }, 'sign-in attempts over the limit');
      return page(429, TOO_MANY_ATTEMPTS);
    }
    const userId = email && password ? await checkSignIn(em, app.account.id, email, password) : undefined;
    if (!userId) return page(401, WRONG_CREDENTIALS);
    await finish(req, res, provider, { login: { accountId: userId } });
  }));

  router.post(`${INTERACTION_PATH}/:uid/consent`, form, withInteraction(async (req, res, provider, interaction, app) => {
    if (interaction.prompt.name !== 'consent' || !csrfValid(interaction.uid, req.body?.csrf)) {
      return sendPage(res, 400, problemPage('Sign-in expired', 'This consent form is no longer valid. Go back to the app and start again.'));
    }
    if (req.body?.decision !== 'approve') {
      return finish(req, res, provider, { error: 'access_denied', error_description: 'The user did not allow the app.' });
    }
    await approve(req, res, provider, interaction, app);
  }));
}
