import type { CredentialResolver } from '../auth/authenticate.js';
import type { TrustProxy } from '../config/config.js';
import type { SignInMethod } from '../auth/sign-in-method.js';
import type { HttpRouteDeps } from './feature.js';
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
  /** TRUST_PROXY: which proxies may name the client's address and scheme. */
  trustProxy: TrustProxy;
  serverSecret: Buffer;
  /** NODE_ENV=production: loopback and private addresses are refused where development allows them (redirect URIs, an issuer's discovery). */
  production: boolean;
  cursors: CursorCodec;
  credentialResolvers: readonly CredentialResolver[];
  userDeletedHooks: readonly UserDeletedHook[];
  /** Builders of the sign-in methods besides the password (the authorization server builds them when it mounts). */
  signInMethods: readonly ((deps: HttpRouteDeps) => SignInMethod)[];
  userSuspendedHooks: readonly UserSuspendedHook[];
}
