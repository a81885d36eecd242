import type { Feature } from '../app/feature.js';
import { Account } from './account.entity.js';
import { ApiKey } from './api-key.entity.js';
import { apiKeyCredentials } from './api-key.credentials.js';
import { AccountsService } from './accounts.service.js';
import { ApiKeyResolver, UserApiKeysResolver } from './api-key.resolver.js';

export const accountsFeature: Feature = {
  name: 'accounts',
  entities: [Account, ApiKey],
  resolvers: [ApiKeyResolver, UserApiKeysResolver],
  routes: [],
  credentialResolvers: [apiKeyCredentials],
  onUserDeleted: (em, user) => new AccountsService(em).revokeUserApiKeys(user.id, user.deletedAt),
  onUserSuspended: (em, user) => new AccountsService(em).revokeUserApiKeys(user.id, user.suspendedAt),
};
