import type { Request, Response, Router } from 'express';
import type { Feature, HttpRouteDeps } from '../app/feature.js';
import { PUBLIC_ID_PATTERN } from '../db/public-id.js';
import { SsoConfiguration } from './sso-configuration.entity.js';
import { SSO_PATHS } from './sso.endpoints.js';
import { SsoResolver } from './sso.resolver.js';
import { serviceProviderDetails } from './sso.service-provider.js';
import { ssoSignInMethod } from './sso.sign-in.js';

/** The SP metadata at a stable public URL, so an identity provider can read it (Entra ID, Okta import it). */
function serviceProviderMetadataRoute(router: Router, deps: HttpRouteDeps): void {
  router.get(SSO_PATHS.samlMetadata, deps.limitPerAddress, (req: Request, res: Response) => {
    const accountId = String(req.params.accountId);
    if (!PUBLIC_ID_PATTERN.test(accountId)) return res.status(404).type('text/plain').send('Not Found');
    res.status(200).type('application/samlmetadata+xml').set('Cache-Control', 'public, max-age=3600')
      .send(serviceProviderDetails(deps.runtime.urls.api, accountId).samlMetadataXml);
  });
}

export const ssoFeature: Feature = {
  name: 'sso',
  entities: [SsoConfiguration],
  resolvers: [SsoResolver],
  routes: [],
  httpRoutes: serviceProviderMetadataRoute,
  signInMethod: ssoSignInMethod,
};
