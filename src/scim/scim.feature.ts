import type { Feature } from '../app/feature.js';
import { ProvisioningToken } from './provisioning-token.entity.js';
import { provisioningTokenCredentials } from './provisioning-token.credentials.js';
import { ProvisioningTokenResolver } from './provisioning-token.resolver.js';

/**
 * Provisioning tokens, the SCIM face's own credential. The face itself (src/scim/scim.face.ts) is
 * mounted by app.ts beside REST and GraphQL; it owns no data: its rows run the users' operations.
 */
export const scimFeature: Feature = {
  name: 'scim',
  entities: [ProvisioningToken],
  resolvers: [ProvisioningTokenResolver],
  routes: [],
  credentialResolvers: provisioningTokenCredentials,
};
