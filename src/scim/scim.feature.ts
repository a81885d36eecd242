import type { Feature } from '../app/feature.js';
import { ProvisioningToken } from './provisioning-token.entity.js';
import { provisioningTokenCredentials } from './provisioning-token.credentials.js';
import { ProvisioningTokenResolver } from './provisioning-token.resolver.js';
import { scimUserRoutes } from './scim.user-routes.js';

/**
 * Provisioning tokens, the SCIM face's own credential, and the SCIM route rows, which the SCIM face
 * (src/faces/scim) serves beside REST and GraphQL; it owns no user data: its rows run the users' operations.
 */
export const scimFeature: Feature = {
  name: 'scim',
  entities: [ProvisioningToken],
  resolvers: [ProvisioningTokenResolver],
  routes: [],
  scimRoutes: scimUserRoutes,
  credentialResolvers: provisioningTokenCredentials,
};
