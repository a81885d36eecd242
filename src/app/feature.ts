import type { Router } from 'express';
import type { CredentialResolver } from '../auth/authenticate.js';
import type { Database } from '../db/database.js';
import type { CommitHook } from '../db/change-journal.js';
import type { Logger } from '../logging/logger.js';
import type { oas31 } from 'openapi3-ts';
import type { PlainOperationDescription } from '../rest/description.js';
import type { RestRoute } from '../rest/route.js';
import type { SignInMethod } from '../auth/sign-in-method.js';
import type { UserDeletedHook, UserSuspendedHook } from '../users/user-lifecycle.js';
import type { HttpRouteDeps } from '../http/runtime.js';
import type { ScimRoute } from '../scim/scim.route-row.js';

export type { HttpRouteDeps };

/** Work a running server repeats in the background, every `everyMs`, one round at a time. */
export interface Job {
  name: string;
  everyMs: number;
  run(): Promise<unknown>;
  /** The warning logged (throttled) when a round fails. */
  failure: string;
}

/** What a feature's background jobs may use; an interval left unset is the feature's default. */
export interface JobDeps {
  database: Database;
  logger: Logger;
  settings: { auditRetentionDays?: number; auditCheckpointIntervalMs?: number; auditRootIndexIntervalMs?: number };
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
  /** SCIM route rows (`/scim/v2`), served by the SCIM face like REST rows. */
  scimRoutes?: ScimRoute[];
  /** Background work while the server runs (`src/app/jobs.ts` runs it, the server's stop ends it). */
  jobs?: (deps: JobDeps) => Job[];
  /** Named OpenAPI schemas (`#/components/schemas/<name>`) the feature's route descriptions refer to. */
  schemas?: Record<string, oas31.SchemaObject>;
}
