import { Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import type { Context } from '../graphql/context.js';
import { PlainResolver } from '../graphql/plain-resolvers.js';
import { DateTimeResolver } from 'graphql-scalars';
import { connectionType } from '../graphql/connection.js';
import type { DelegationStatus, DelegationType, OAuthDelegation } from './oauth-delegation.entity.js';

export const OAuthDelegationTypeEnum = {
  WEB: 'web',
  MOBILE: 'mobile',
  INTEGRATION: 'integration',
} as const satisfies Record<string, DelegationType>;

registerEnumType(OAuthDelegationTypeEnum, {
  name: 'OAuthDelegationType',
  valuesConfig: {
    WEB: { description: 'A sign-in to the web app.' },
    MOBILE: { description: 'A sign-in to the mobile app.' },
    INTEGRATION: { description: 'An integration: a chat or third-party app (acting as a user or for the account).' },
  },
  description: 'What the delegation authorizes: a web app session, the mobile app, or an integration (chat or third-party app).',
});

export const OAuthDelegationStatusEnum = {
  ISSUED: 'issued',
  REVOKED: 'revoked',
} as const satisfies Record<string, DelegationStatus>;

registerEnumType(OAuthDelegationStatusEnum, {
  name: 'OAuthDelegationStatus',
  valuesConfig: {
    ISSUED: { description: 'In force: its tokens work until they expire.' },
    REVOKED: { description: 'Ended: its tokens are refused.' },
  },
  description: 'An issued delegation\'s token works until it expires; a revoked one\'s never again.',
});

/**
 * The GraphQL face of a delegation. Resolvers return the entity; `self`, `htmlUrl` and `scopes`
 * are field resolvers. The access token's digest is not a field, on purpose.
 */
@ObjectType('OAuthDelegation', { description: 'One authorization of an app (via OAuth) to act as a user: a web session, the mobile app, or an integration.' })
export class OAuthDelegationObject implements Partial<Record<keyof OAuthDelegation, unknown>> {
  @Field(() => ID, { description: 'A uuid.' })
  id!: string;

  @Field(() => ID, { nullable: true, description: 'The user the delegation acts as; null for an integration app\'s account-wide delegation (it acts for the account).' })
  userId!: string | null;

  @Field(() => OAuthDelegationTypeEnum, { description: 'What the delegation authorizes.' })
  delegationType!: DelegationType;

  @Field({ description: 'The OAuth client (app) the user authorized.' })
  clientId!: string;

  @Field(() => String, { nullable: true, description: 'The app\'s name, for delegations made by a sign-in or app authorization (null for operator-issued ones).' })
  clientName!: string | null;

  @Field({ description: 'The granted OAuth scopes, space-separated (see also `scopes`).' })
  scope!: string;

  @Field(() => OAuthDelegationStatusEnum, { description: 'ISSUED (in force) or REVOKED.' })
  status!: DelegationStatus;

  @Field(() => DateTimeResolver, { description: 'When the delegation was issued.' })
  createdAt!: Date;

  @Field(() => DateTimeResolver, { description: 'After this instant the token is refused even while ISSUED.' })
  expiresAt!: Date;

  @Field(() => DateTimeResolver, { nullable: true, description: 'When it was revoked; null while ISSUED.' })
  revokedAt!: Date | null;

  @PlainResolver<{ id: string }, Context>((delegation, context) => context.authentication.status === 'authenticated' && context.authentication.principal.kind === 'oauth' && context.authentication.principal.credentialId === delegation.id)
  @Field(() => Boolean, { description: 'True for the delegation behind the token making this request ("this device"); false for every other, and for requests made with an API key.' })
  current!: boolean;
}

export const OAuthDelegationConnection = connectionType<OAuthDelegation>('OAuthDelegation', () => OAuthDelegationObject);

@ObjectType({ description: 'The revocations still pending for the account: revocation is synchronous, so none ever is.' })
export class OAuthDelegationRevocationRequestsStatus {
  @Field(() => Int, { description: 'Always 0: revocation completes before DELETE /oauth_delegations (or deleteOAuthDelegations) answers.' })
  pendingCount!: number;

  @Field(() => DateTimeResolver, { description: 'The end of the searched range: the argument given, or now.' })
  requestedAtEnd!: Date;
}
