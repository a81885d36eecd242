import { Ctx, Field, ObjectType, registerEnumType, Resolver, Root, Subscription } from 'type-graphql';
import type { Context } from '../graphql/context.js';
import { requireLiveSession, type AccessRevocationReason, type ViewerAccessMessage } from '../graphql/live-session.js';

export const AccessRevocationReasonEnum = {
  CREDENTIAL_REVOKED: 'credential_revoked',
  CREDENTIAL_EXPIRED: 'credential_expired',
  USER_DELETED: 'user_deleted',
  USER_SUSPENDED: 'user_suspended',
  ACCESS_CHANGED: 'access_changed',
} as const satisfies Record<string, AccessRevocationReason>;

registerEnumType(AccessRevocationReasonEnum, {
  name: 'AccessRevocationReason',
  description: 'Why the connection\'s credential stopped working.',
  valuesConfig: {
    CREDENTIAL_REVOKED: { description: 'The key or token was revoked (a sign-out, `DELETE /oauth_delegations`, an app deleted).' },
    CREDENTIAL_EXPIRED: { description: 'The token reached its expiry.' },
    USER_DELETED: { description: 'The credential\'s user was deleted.' },
    USER_SUSPENDED: { description: 'The credential\'s user was suspended.' },
    ACCESS_CHANGED: {
      description: 'Never sent.',
      deprecationReason: 'A change that leaves the credential working (a changed role, narrowed scopes) is not a revocation: the connection stays open and each subscription the viewer may no longer see ends with its own FORBIDDEN error.',
    },
  },
});

@ObjectType({ description: 'The connection\'s credential stopped working; the server closes the WebSocket (4403) right after sending this. Sign the viewer out (or ask for a new credential).' })
export class ViewerAccessRevokedEvent {
  @Field(() => AccessRevocationReasonEnum, { description: 'Why access ended.' })
  reason!: AccessRevocationReason;

  @Field(() => Date, { description: 'When the server noticed.' })
  occurredAt!: Date;
}

@Resolver()
export class ViewerAccessResolver {
  // Any credential may learn that its own access is gone: no scope or role is required.
  @Subscription(() => ViewerAccessRevokedEvent, {
    description: 'Sent once when the credential of this connection stops working (revoked, expired, its user deleted or suspended, its app disabled); the socket then closes with 4403. A change that leaves the credential working (a changed role) is not sent here: the connection stays open, and subscriptions the viewer may no longer see end with FORBIDDEN. WebSocket only (graphql-ws).',
    subscribe: ({ context }) => requireLiveSession(context as Context).viewerAccessEvents(),
  })
  viewerAccessRevoked(@Root() message: ViewerAccessMessage, @Ctx() _context: Context): ViewerAccessRevokedEvent {
    return { reason: message.reason, occurredAt: message.occurredAt };
  }
}
