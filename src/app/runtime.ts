import type { CredentialResolver } from '../auth/authenticate.js';
import type { CursorCodec } from '../graphql/cursor.js';
import type { UserDeletedHook, UserSuspendedHook } from '../users/user-lifecycle.js';

export interface PublicUrls {
  api: string;
  web: string;
  feed: string;
}

/** What every request shares and no request changes: built once at start. */
export interface Runtime {
  urls: PublicUrls;
  serverSecret: Buffer;
  cursors: CursorCodec;
  credentialResolvers: readonly CredentialResolver[];
  userDeletedHooks: readonly UserDeletedHook[];
  userSuspendedHooks: readonly UserSuspendedHook[];
}
