import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import type { DelegationType } from './oauth-delegation.entity.js';
import { OAuthDelegationTypeEnum } from './oauth-delegation.type.js';

@InputType({ description: 'Signs a user out of apps: revokes every ISSUED delegation of the user of these types.' })
export class DeleteOAuthDelegationsInput {
  @Field(() => ID)
  userId!: string;

  @Field(() => [OAuthDelegationTypeEnum], { description: 'MOBILE (sign out of the mobile app) and/or WEB (sign out of the web app); INTEGRATION is refused.' })
  types!: DelegationType[];
}

@ObjectType()
export class DeleteOAuthDelegationsPayload {
  @Field(() => Int, { description: 'How many delegations this call revoked (0 when they already were).' })
  revokedCount!: number;
}
