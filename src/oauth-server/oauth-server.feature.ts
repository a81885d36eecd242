import type { NextFunction, Request, Response, Router } from 'express';
import type Provider from 'oidc-provider';
import type { Feature, HttpRouteDeps } from '../app/feature.js';
import { interactionRoutes } from './interactions.js';
import { OAuthApp } from './oauth-app.entity.js';
import { flowTokenCredentials } from './oauth-token.credentials.js';
import { OAuthServerResolver } from './oauth-server.resolver.js';
import { INTERACTION_PATH, OAUTH_PREFIX, createProvider } from './provider.js';

const DISCOVERY_PATHS = new Set(['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']);

/**
 * The authorization server on the same Express app: oidc-provider answers discovery and everything
 * under /oauth except the interaction pages, which are ours. The provider is built on first use
 * (it loads the signing keys from the database), once per app instance.
 */
function mountAuthorizationServer(router: Router, deps: HttpRouteDeps): void {
  let building: Promise<Provider> | undefined;
  const signInMethods = deps.runtime.signInMethods.map((build) => build(deps));
  const provider = () => {
    building ??= createProvider({ database: deps.database, serverSecret: deps.runtime.serverSecret, logger: deps.logger, settings: { issuer: deps.runtime.urls.api, trustProxy: deps.runtime.trustProxy }, signInMethods })
      .catch((error: unknown) => {
        building = undefined;
        throw error;
      });
    return building;
  };
  let handler: ReturnType<Provider['callback']> | undefined;

  // Every sign-in step is unauthenticated and some write rows: each client address has a budget.
  router.use([OAUTH_PREFIX, ...DISCOVERY_PATHS], deps.limitPerAddress);
  interactionRoutes(router, { database: deps.database, serverSecret: deps.runtime.serverSecret, logger: deps.logger, provider, signInMethods });
  const answer = async (req: Request, res: Response, next: NextFunction) => {
    try {
      handler ??= (await provider()).callback();
      handler(req, res);
    } catch (error) {
      next(error);
    }
  };
  // Every request passes here: those that are not the provider's go on without a promise of their own.
  router.use((req: Request, res: Response, next: NextFunction) => {
    const { path } = req;
    const ours = DISCOVERY_PATHS.has(path) || (path.startsWith(`${OAUTH_PREFIX}/`) && !path.startsWith(`${INTERACTION_PATH}/`));
    if (!ours) return next();
    return answer(req, res, next);
  });
}

export const oauthServerFeature: Feature = {
  name: 'oauth-server',
  entities: [OAuthApp],
  resolvers: [OAuthServerResolver],
  routes: [],
  credentialResolvers: [flowTokenCredentials],
  httpRoutes: mountAuthorizationServer,
};
