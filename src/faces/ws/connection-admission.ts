import type { WebSocket } from 'ws';
import { authenticate } from '../../auth/authenticate.js';
import type { Principal } from '../../auth/principal.js';
import type { RateLimiter } from '../../auth/rate-limit.js';
import type { CredentialResolver } from '../../auth/authenticate.js';
import type { Database } from '../../db/database.js';
import { isDatabaseUnavailable } from '../../db/database-errors.js';
import { addressBudgetKey, drawBudget } from '../../http/rate-budget.js';
import type { Logger } from '../../logging/logger.js';

/** Close codes of the graphql-ws protocol family this server uses (besides 1001 going away and 4403 access revoked). */
export const CLOSE_UNAUTHORIZED = 4401;
export const CLOSE_FORBIDDEN = 4403;
export const CLOSE_TOO_MANY = 4429;
/** WebSocket's "Try Again Later": the database is away (a failover's gap), the connection may be opened again shortly. */
export const CLOSE_TRY_AGAIN_LATER = 1013;

export interface AdmissionDeps {
  database: Database;
  credentialResolvers: readonly CredentialResolver[];
  rateLimiter: RateLimiter;
  logger: Logger;
  maxConnectionsPerCredential: number;
  /** How many connections the credential holds open on this instance now. */
  connectionsOf(credentialId: string): number;
}

/**
 * `connection_init`: the credential it carries is authenticated for the WebSocket face and draws
 * on its budget (without a valid one, the client address's), and the credential's open connections
 * stay within their bound. Refused, the socket is closed with the code that says why and nothing is
 * returned; admitted, the principal the connection acts as.
 */
export async function admitConnection(socket: WebSocket, authorization: string | undefined, clientAddress: string | undefined, deps: AdmissionDeps): Promise<Principal | undefined> {
  let authentication: Awaited<ReturnType<typeof authenticate>>;
  try {
    authentication = await authenticate(deps.database.em(), authorization, deps.credentialResolvers, 'websocket');
  } catch (error) {
    if (!isDatabaseUnavailable(error)) throw error;
    // The socket's 503: nothing was decided about the credential, the client retries.
    deps.logger.debug({ err: error }, 'live updates: connection_init met an unavailable database');
    socket.close(CLOSE_TRY_AGAIN_LATER, 'Service Unavailable: retry shortly');
    return undefined;
  }
  if (authentication.status === 'rejected' && authentication.wrongFace) {
    // A valid credential of another face (a provisioning token): forbidden here, not unknown.
    socket.close(CLOSE_FORBIDDEN, 'Forbidden: this credential is not valid on this face');
    return undefined;
  }
  if (authentication.status !== 'authenticated') {
    // As over HTTP, a request without a valid credential draws on its client address's budget (guessing tokens costs the same here), and past it is told so.
    if (!(await drawBudget(deps.rateLimiter, addressBudgetKey(clientAddress))).allowed) {
      socket.close(CLOSE_TOO_MANY, 'Rate limit exceeded');
      return undefined;
    }
    socket.close(CLOSE_UNAUTHORIZED, authentication.status === 'anonymous' ? 'Unauthorized: connection_init must carry an authorization' : 'Unauthorized: the credential is unknown, revoked or expired');
    return undefined;
  }
  const { principal } = authentication;
  if (!(await drawBudget(deps.rateLimiter, principal.rateLimitKey)).allowed) {
    socket.close(CLOSE_TOO_MANY, 'Rate limit exceeded');
    return undefined;
  }
  if (deps.connectionsOf(principal.credentialId) >= deps.maxConnectionsPerCredential) {
    socket.close(CLOSE_TOO_MANY, `Too many connections for this credential (at most ${deps.maxConnectionsPerCredential})`);
    return undefined;
  }
  return socket.readyState === socket.OPEN ? principal : undefined;
}
