import type { EntityManager } from '@mikro-orm/sql';
import type { Principal } from '../auth/principal.js';
import type { RevocationReason } from '../oauth-delegations/oauth-delegation.entity.js';
import { revokeUserDelegations } from '../oauth-delegations/oauth-delegation.service.js';

export interface RevokedSignIns {
  sessions: number;
  delegations: number;
}

/**
 * "Sign this user out everywhere": ends the user's sign-in sessions at the authorization server
 * (and sign-ins in progress), and revokes every grant and delegation of the user -- first-party
 * apps, third-party apps, operator-issued tokens -- so every access and refresh token of theirs is
 * refused from the next request on, on every instance. API keys are not touched (they are managed
 * on their own). `keepDelegationId` spares the credential making the change (the session the user
 * is in). Call it inside the transaction that holds the user's row lock.
 *
 * Used by a password change; meant for every "the user's access must end now" event (suspension).
 */
export async function revokeUserSessionsAndGrants(
  em: EntityManager,
  user: { accountId: string; userId: string },
  by: { principal?: Principal; reason: RevocationReason; keepDelegationId?: string },
): Promise<RevokedSignIns> {
  const ended = await em.execute<{ affectedRows?: number }>(
    `delete from oauth_server_records where user_id = ? and model in ('Session', 'Interaction', 'AuthorizationCode')`,
    [user.userId],
    'run',
  );
  const delegations = await revokeUserDelegations(em, user, by);
  return { sessions: ended.affectedRows ?? 0, delegations };
}
