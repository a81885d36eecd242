import type { RequestHandler, Router } from 'express';
import type { CredentialResolver } from '../auth/authenticate.js';
import type { Database } from '../db/database.js';
import type { CommitHook } from '../db/change-journal.js';
import type { Logger } from '../logging/logger.js';
import type { oas31 } from 'openapi3-ts';
import type { PlainOperationDescription } from '../rest/description.js';
import type { RestRoute } from '../rest/route.js';
import type { SignInMethod } from '../auth/sign-in-method.js';
import type { UserDeletedHook, UserSuspendedHook } from '../users/user-lifecycle.js';
import type { Runtime } from './runtime.js';

/** What a plain HTTP route (outside GraphQL and the v2 REST facade) may use. */
export interface HttpRouteDeps {
  database: Database;
  runtime: Runtime;
  logger: Logger;
  /** Draws on the client address's request budget (429 past it): for routes outside the API's credential budgets. */
  limitPerAddress: RequestHandler;
}

/** What a feature module contributes; `src/app/features.ts` lists them, and nothing else needs to know. */
export interface Feature {
  name: string;
  entities: Function[];
  resolvers: Function[];
  routes: RestRoute[];
  credentialResolvers?: CredentialResolver[];
  onUserDeleted?: UserDeletedHook;
  /** Steps of the write path run before every commit that recorded changes (`recordChange`), e.g. the audit trail. */
  commitHooks?: CommitHook[];
  /** Tables a least-privilege app role may only read (`accessctl db grant-app-role`): written through the owner's functions alone. */
  appReadOnlyTables?: string[];
  /** Another way to sign in to the authorization server (single sign-on), built once per app. */
  signInMethod?: (deps: HttpRouteDeps) => SignInMethod;
  /** Revokes what the feature issued to a user who is being suspended, in the suspending transaction. */
  onUserSuspended?: UserSuspendedHook;
  /**
   * Plain Express routes that are not part of the API (no credentials, no v2 `Accept`
   * versioning, not JSON), e.g. the iCal feed. Mounted before authentication and REST negotiation.
   */
  httpRoutes?: (router: Router, deps: HttpRouteDeps) => void;
  /** The OpenAPI descriptions of `httpRoutes`, so the document lists them too. */
  httpRouteDescriptions?: PlainOperationDescription[];
  /** Named OpenAPI schemas (`#/components/schemas/<name>`) the feature's route descriptions refer to. */
  schemas?: Record<string, oas31.SchemaObject>;
}
