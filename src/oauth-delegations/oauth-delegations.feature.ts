import type { Feature } from '../app/feature.js';
import { bearerCredentials } from './oauth-delegation.credentials.js';
import { OAuthDelegation } from './oauth-delegation.entity.js';
import { OAuthDelegationResolver, UserOAuthDelegationsResolver } from './oauth-delegation.resolver.js';
import { oauthDelegationRoutes, oauthDelegationSchemas } from './oauth-delegation.rest.js';
import { SignInSessionResolver, UserSignInSessionsResolver } from './sign-in-session.resolver.js';
import { endDeletedUsersAccess, endSuspendedUsersAccess } from './user-access.js';

export const oauthDelegationsFeature: Feature = {
  name: 'oauth-delegations',
  entities: [OAuthDelegation],
  resolvers: [OAuthDelegationResolver, UserOAuthDelegationsResolver, SignInSessionResolver, UserSignInSessionsResolver],
  routes: oauthDelegationRoutes,
  schemas: oauthDelegationSchemas,
  credentialResolvers: [bearerCredentials],
  onUserDeleted: async (em, user, principal) => {
    await endDeletedUsersAccess(em, user, principal);
  },
  onUserSuspended: async (em, user, principal) => {
    await endSuspendedUsersAccess(em, user, principal);
  },
};
