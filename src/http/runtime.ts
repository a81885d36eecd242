import type { CredentialResolver } from '../auth/authenticate.js';
import type { TrustProxy } from '../config/config.js';
import type { SignInMethod } from '../auth/sign-in-method.js';
import type { RequestHandler } from 'express';
import type { Database } from '../db/database.js';
import type { Logger } from '../logging/logger.js';
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
  /** How old a browser sign-in may be for managing credentials and single sign-on with its token (RFC 9470 step-up). */
  stepUpMaxAgeSeconds: number;
  cursors: CursorCodec;
  credentialResolvers: readonly CredentialResolver[];
  userDeletedHooks: readonly UserDeletedHook[];
  /** Builders of the sign-in methods besides the password (the authorization server builds them when it mounts). */
  signInMethods: readonly ((deps: HttpRouteDeps) => SignInMethod)[];
  userSuspendedHooks: readonly UserSuspendedHook[];
}

/** What a plain HTTP route (outside GraphQL and the v2 REST facade) may use. */
export interface HttpRouteDeps {
  database: Database;
  runtime: Runtime;
  logger: Logger;
  /** Draws on the client address's request budget (429 past it): for routes outside the API's credential budgets. */
  limitPerAddress: RequestHandler;
}
