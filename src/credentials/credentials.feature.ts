import type { Feature } from '../app/feature.js';
import { credentialsHttpRouteDescriptions, credentialsHttpRoutes } from './credentials.http.js';

/**
 * Credentials across features: revocation by possession (`POST /credentials/revoke`). It owns no
 * data: it calls the revocations that the accounts (API keys), SCIM (provisioning tokens) and
 * OAuth delegation features export.
 */
export const credentialsFeature: Feature = {
  name: 'credentials',
  entities: [],
  resolvers: [],
  routes: [],
  httpRoutes: credentialsHttpRoutes,
  httpRouteDescriptions: credentialsHttpRouteDescriptions,
};
