import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import type { User } from '../users/user.entity.js';
import { UserType } from '../users/user.type.js';
import type { DelegationType, OAuthDelegation } from './oauth-delegation.entity.js';
import { OAuthDelegationObject, OAuthDelegationTypeEnum } from './oauth-delegation.type.js';

@InputType({ description: 'Signs a user out of apps: revokes every ISSUED delegation of the user of these types.' })
export class DeleteOAuthDelegationsInput {
  @Field(() => ID, { description: 'The user to sign out.' })
  userId!: string;

  @Field(() => [OAuthDelegationTypeEnum], { description: 'MOBILE (sign out of the mobile app) and/or WEB (sign out of the web app); INTEGRATION is refused.' })
  types!: DelegationType[];
}

@ObjectType({ description: 'What deleteOAuthDelegations changed: the delegations it revoked and their user.' })
export class DeleteOAuthDelegationsPayload {
  @Field(() => Int, { description: 'How many delegations this call revoked (0 when they already were).' })
  revokedCount!: number;

  @Field(() => [OAuthDelegationObject], { description: 'The delegations this call revoked, now REVOKED, newest first (none when they already were).' })
  revokedOAuthDelegations!: OAuthDelegation[];

  @Field(() => UserType, { description: 'The user signed out, as it is now.' })
  user!: User;
}

@InputType({ description: 'Revokes one delegation of a user, of any type: a mobile or web sign-in, a third-party app\'s grant (INTEGRATION acting as the user), an operator-issued token.' })
export class RevokeOAuthDelegationInput {
  @Field(() => ID, { nullable: true, description: 'The user whose delegation it is. Omitted: the delegation is found by id alone (an integration app\'s account-wide delegation has no user).' })
  userId?: string | null;

  @Field(() => ID, { description: 'The delegation; with userId, it must be that user\'s (else NOT_FOUND).' })
  id!: string;
}

@ObjectType({ description: 'What revokeOAuthDelegation changed.' })
export class RevokeOAuthDelegationPayload {
  @Field(() => OAuthDelegationObject, { description: 'The delegation, now REVOKED.' })
  oauthDelegation!: OAuthDelegation;
}
