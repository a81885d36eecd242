import type { CredentialResolver } from '../auth/authenticate.js';
import type { RestRoute } from '../rest/route.js';
import type { UserDeletedHook } from '../users/user-lifecycle.js';

/** What a feature module contributes; `src/app/features.ts` lists them, and nothing else needs to know. */
export interface Feature {
  name: string;
  entities: Function[];
  resolvers: Function[];
  routes: RestRoute[];
  credentialResolvers?: CredentialResolver[];
  onUserDeleted?: UserDeletedHook;
}
