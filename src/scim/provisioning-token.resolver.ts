import { Arg, Ctx, Field, FieldResolver, ID, InputType, Mutation, ObjectType, Query, Resolver, Root } from 'type-graphql';
import { DateTimeResolver } from 'graphql-scalars';
import { hasOwnerRights, policy } from '../auth/policy.js';
import { MaxLength } from '../graphql/input-bounds.js';
import { requirePrincipal, type Context } from '../graphql/context.js';
import type { ProvisioningToken } from './provisioning-token.entity.js';
import { ProvisioningTokensService } from './provisioning-tokens.service.js';

const DESCRIPTION_MAX = 255;

@ObjectType('ProvisioningToken', { description: 'A bearer token an identity provider uses to provision the account\'s users over SCIM (`/scim/v2` only). Its secret is shown once, when created.' })
export class ProvisioningTokenObject {
  @Field(() => ID, { description: 'The token\'s id (not secret).' })
  id!: string;

  @Field(() => String, { nullable: true, description: 'What the token is for (e.g. the identity provider\'s name).' })
  description!: string | null;

  @Field(() => DateTimeResolver, { description: 'When the token was created.' })
  createdAt!: Date;

  @Field(() => DateTimeResolver, { nullable: true, description: 'When the token was last used; at most 60 seconds stale.' })
  lastUsedAt!: Date | null;

  @Field(() => DateTimeResolver, { nullable: true, description: 'When the token was revoked; null while it works.' })
  revokedAt!: Date | null;
}

@InputType({ description: 'A new provisioning token.' })
class CreateProvisioningTokenInput {
  @MaxLength(DESCRIPTION_MAX)
  @Field(() => String, { nullable: true, description: `What the token is for (at most ${DESCRIPTION_MAX} characters).` })
  description?: string | null;
}

@ObjectType({ description: 'A new provisioning token and its secret.' })
class CreateProvisioningTokenPayload {
  @Field(() => ProvisioningTokenObject, { description: 'The token created.' })
  provisioningToken!: ProvisioningToken;

  @Field({ description: 'The token itself, shown only now: the identity provider sends `Authorization: Bearer <token>` to `/scim/v2`.' })
  token!: string;
}

@InputType({ description: 'Revokes a provisioning token.' })
class RevokeProvisioningTokenInput {
  @Field(() => ID, { description: 'The token\'s id.' })
  id!: string;
}

@ObjectType({ description: 'The revoked provisioning token.' })
class RevokeProvisioningTokenPayload {
  @Field(() => ProvisioningTokenObject, { description: 'The token, now revoked (revoking a revoked token changes nothing).' })
  provisioningToken!: ProvisioningToken;
}

/** The account's provisioning tokens through GraphQL: `account_admin` only, over the CLI's service. */
@Resolver(() => ProvisioningTokenObject)
export class ProvisioningTokenResolver {
  @Query(() => [ProvisioningTokenObject], { nullable: true, description: 'The account\'s provisioning tokens, newest first, revoked ones included. Owners, admins and account API keys. Nullable: forbidden, it is null with its error and the rest of the page is served.' })
  provisioningTokens(@Ctx() context: Context): Promise<ProvisioningToken[]> {
    return new ProvisioningTokensService(context.em).listForAccount(requirePrincipal(context).accountId);
  }

  @Mutation(() => CreateProvisioningTokenPayload, { description: 'Creates a provisioning token (valid only on /scim/v2 of this account); its secret is in the answer only. Owners, admins and full-access account keys.' })
  async createProvisioningToken(@Arg('input', () => CreateProvisioningTokenInput, { description: 'What the new provisioning token is for.' }) input: CreateProvisioningTokenInput, @Ctx() context: Context): Promise<CreateProvisioningTokenPayload> {
    const principal = requirePrincipal(context);
    policy.assertMayIssueProvisioningToken(principal);
    const issued = await context.transactions.run(context.em, (tx) => new ProvisioningTokensService(tx).create(principal.accountId, input.description ?? undefined, hasOwnerRights(principal)), 'provisioningTokens.create');
    return { provisioningToken: issued.provisioningToken, token: issued.token };
  }

  @Mutation(() => RevokeProvisioningTokenPayload, { description: 'Revokes a provisioning token before answering: refused from the next request on, on every instance. Owners, admins and full-access account keys.' })
  async revokeProvisioningToken(@Arg('input', () => RevokeProvisioningTokenInput, { description: 'The provisioning token to revoke.' }) input: RevokeProvisioningTokenInput, @Ctx() context: Context): Promise<RevokeProvisioningTokenPayload> {
    const principal = requirePrincipal(context);
    const revoked = await context.transactions.run(context.em, (tx) => new ProvisioningTokensService(tx).revoke(input.id, principal.accountId), 'provisioningTokens.revoke');
    return { provisioningToken: revoked.provisioningToken };
  }

  @FieldResolver(() => String, { nullable: true, description: 'The last 4 characters of the token; null for tokens issued before they were kept.' })
  truncatedToken(@Root() token: ProvisioningToken): string | null {
    return token.tokenTail;
  }
}
