import type { RequestHandler, Request, Response, Router } from 'express';
import type Provider from 'oidc-provider';
import { firstOffer, type InteractionFinisher, type SignInMethod, type SignInOffer } from '../auth/sign-in-method.js';
import type { Database } from '../db/database.js';
import { USER_FIELD_LIMITS } from '../users/user.validation.js';
import { findApp } from './apps.service.js';
import type { OAuthApp } from './oauth-app.entity.js';
import { problemPage } from './pages.js';
import { INTERACTION_PATH } from './provider.js';
import { signedInResult } from './sign-in-result.js';

type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;
type InteractionHandler = (req: Request, res: Response, provider: Provider, interaction: Interaction, app: OAuthApp) => Promise<void>;

export interface AlternativeOffer extends SignInOffer {
  /** Where the sign-in page's "Sign in with ..." form posts. */
  action: string;
}

/**
 * The seam between the password sign-in and other sign-in methods (single sign-on): what the
 * sign-in page offers, the form that starts the other method's round trip, and the finisher the
 * method calls when its user comes back verified. The first method with an offer for the account wins.
 */
export function alternativeSignIn(methods: readonly SignInMethod[], deps: {
  csrfFor(uid: string): string;
  csrfValid(uid: string, given: unknown): boolean;
  sendPage(res: Response, status: number, html: string): void;
  form: RequestHandler;
  database: Database;
  provider(): Promise<Provider>;
}) {
  const chosen = (accountId: string) => firstOffer(methods, accountId);

  const finisher: InteractionFinisher = {
    async signedIn(interactionUid, accountId, userId, identityProvider) {
      const provider = await deps.provider();
      const interaction = await provider.Interaction.find(interactionUid);
      if (!interaction || interaction.prompt.name !== 'login' || interaction.result) return undefined;
      const app = await findApp(deps.database.em(), String(interaction.params.client_id ?? ''));
      if (!app || app.account.id !== accountId) return undefined;
      interaction.result = signedInResult(userId, { method: 'single_sign_on', identityProvider });
      await interaction.save(interaction.exp - Math.floor(Date.now() / 1000));
      return interaction.returnTo;
    },
    problem(res, status, title, message) {
      deps.sendPage(res, status, problemPage(title, message));
    },
  };

  return {
    async offer(interactionUid: string, accountId: string): Promise<AlternativeOffer | undefined> {
      const found = await chosen(accountId);
      return found && { ...found.offer, action: `${INTERACTION_PATH}/${interactionUid}/alternative` };
    },

    /** Whether the verified password of `userId` signs them in although the account's method refuses passwords (an owner or admin it may not sign in). */
    async passwordAccepted(accountId: string, userId: string): Promise<boolean> {
      const found = await chosen(accountId);
      if (!found || found.offer.passwordAllowed) return true;
      return (await found.method.acceptsPasswordOf?.(accountId, userId)) ?? false;
    },

    mount(router: Router, withInteraction: (handler: InteractionHandler) => RequestHandler): void {
      router.post(`${INTERACTION_PATH}/:uid/alternative`, deps.form, withInteraction(async (req, res, _provider, interaction, app) => {
        const found = interaction.prompt.name === 'login' && deps.csrfValid(interaction.uid, req.body?.csrf) ? await chosen(app.account.id) : undefined;
        if (!found) {
          return deps.sendPage(res, 400, problemPage('Sign-in expired', 'This sign-in form is no longer valid. Go back to the app and start again.'));
        }
        const email = typeof req.body?.email === 'string' ? req.body.email.trim().slice(0, USER_FIELD_LIMITS.email.max) : '';
        let location: string;
        try {
          location = await found.method.begin({ interactionUid: interaction.uid, accountId: app.account.id, loginHint: email }, res);
        } catch {
          return deps.sendPage(res, 502, problemPage('Sign-in unavailable', 'Your identity provider could not be reached. Try again in a few minutes.'));
        }
        res.redirect(303, location);
      }));
      for (const method of methods) method.returnRoutes(router, finisher);
    },
  };
}
