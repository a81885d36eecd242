import { Field, ID, InputType, Int, ObjectType, registerEnumType } from 'type-graphql';
import { DateTimeResolver } from 'graphql-scalars';
import { connectionType } from '../graphql/connection.js';
import { MaxLength } from '../graphql/input-bounds.js';
import type { ApiKey } from './api-key.entity.js';
import { API_KEY_DESCRIPTION_MAX, DEFAULT_ROLL_GRACE_SECONDS, MAX_API_KEY_LIFETIME_DAYS, MAX_ROLL_GRACE_SECONDS, type ApiKeyKind, type ApiKeyStatus } from './api-keys.service.js';

export const ApiKeyKindEnum = {
  ACCOUNT_FULL_ACCESS: 'account_full_access',
  ACCOUNT_READ_ONLY: 'account_read_only',
  USER: 'user',
} as const satisfies Record<string, ApiKeyKind>;

registerEnumType(ApiKeyKindEnum, {
  name: 'ApiKeyKind',
  description: 'What an API key acts as.',
  valuesConfig: {
    ACCOUNT_FULL_ACCESS: { description: 'The account, with admin rights (can_update_user); no user. Prefix `aagak_`.' },
    ACCOUNT_READ_ONLY: { description: 'The account, reads only; never sees calendar URLs. Prefix `aagro_`.' },
    USER: { description: 'One user, with that user\'s current role. Prefix `aaguk_`.' },
  },
});

export const ApiKeyStatusEnum = {
  ACTIVE: 'active',
  EXPIRED: 'expired',
  REVOKED: 'revoked',
} as const satisfies Record<string, ApiKeyStatus>;

registerEnumType(ApiKeyStatusEnum, {
  name: 'ApiKeyStatus',
  description: 'Whether an API key works.',
  valuesConfig: {
    ACTIVE: { description: 'Works (until `expiresAt`, when set).' },
    EXPIRED: { description: 'Its `expiresAt` has passed (a chosen expiry, or the end of a roll\'s grace period): refused.' },
    REVOKED: { description: 'Revoked: refused from the next request on, on every instance.' },
  },
});

/** The GraphQL face of a key: resolvers return the entity; the digest is not a field, and the secret exists only in a create or roll payload. */
@ObjectType('ApiKey', { description: 'An API key (`Authorization: Token token=<key>`). Its secret is shown once, when created or rolled.' })
export class ApiKeyObject {
  @Field(() => ID, { description: 'The key\'s id (not secret).' })
  id!: string;

  @Field(() => String, { nullable: true, description: 'What the key is for, as its creator described it.' })
  description!: string | null;

  @Field(() => DateTimeResolver, { description: 'When the key was created.' })
  createdAt!: Date;

  @Field(() => DateTimeResolver, { nullable: true, description: 'When the key was last used; at most 60 seconds stale. Null: never used since this was recorded.' })
  lastUsedAt!: Date | null;

  @Field(() => DateTimeResolver, { nullable: true, description: 'When the key stops working by itself (a chosen expiry, or the end of a roll\'s grace period); null: never.' })
  expiresAt!: Date | null;

  @Field(() => DateTimeResolver, { nullable: true, description: 'When the key was revoked; null while not revoked.' })
  revokedAt!: Date | null;
}

export const ApiKeyConnection = connectionType<ApiKey>('ApiKey', () => ApiKeyObject);

@InputType({ description: 'A new API key.' })
export class CreateApiKeyInput {
  @Field(() => ApiKeyKindEnum, { description: 'What the key acts as.' })
  kind!: ApiKeyKind;

  @Field(() => ID, { nullable: true, description: 'For a USER key: the user it acts as (the caller themself, or, with can_update_user, another user; the owner\'s only by the owner). Not for account keys.' })
  userId?: string | null;

  @MaxLength(API_KEY_DESCRIPTION_MAX)
  @Field(() => String, { nullable: true, description: `What the key is for (at most ${API_KEY_DESCRIPTION_MAX} characters).` })
  description?: string | null;

  @Field(() => DateTimeResolver, { nullable: true, description: `When the key stops working: in the future and at most ${MAX_API_KEY_LIFETIME_DAYS} days away. Omitted: never.` })
  expiresAt?: Date | null;
}

@ObjectType({ description: 'A new API key and its secret.' })
export class CreateApiKeyPayload {
  @Field(() => ApiKeyObject, { description: 'The key created.' })
  apiKey!: ApiKey;

  @Field({ description: 'The key itself, shown only now: only its digest is stored. Send it as `Authorization: Token token=<secret>`.' })
  secret!: string;
}

@InputType({ description: 'Revokes an API key.' })
export class RevokeApiKeyInput {
  @Field(() => ID, { description: 'The key\'s id.' })
  id!: string;
}

@ObjectType({ description: 'The revoked key.' })
export class RevokeApiKeyPayload {
  @Field(() => ApiKeyObject, { description: 'The key, now REVOKED (revoking a revoked key changes nothing).' })
  apiKey!: ApiKey;
}

@InputType({ description: 'Replaces an API key by a new one of the same kind, user, description and expiry.' })
export class RollApiKeyInput {
  @Field(() => ID, { description: 'The ACTIVE key to replace.' })
  id!: string;

  @Field(() => Int, {
    defaultValue: DEFAULT_ROLL_GRACE_SECONDS,
    description: `How many seconds the replaced key keeps working (0 to ${MAX_ROLL_GRACE_SECONDS}; default ${DEFAULT_ROLL_GRACE_SECONDS}): time to deploy the new one.`,
  })
  previousExpiresIn!: number;
}

@ObjectType({ description: 'The replacement key, its secret, and the replaced key.' })
export class RollApiKeyPayload {
  @Field(() => ApiKeyObject, { description: 'The new key.' })
  apiKey!: ApiKey;

  @Field({ description: 'The new key itself, shown only now.' })
  secret!: string;

  @Field(() => ApiKeyObject, { description: 'The replaced key, now expiring at the end of its grace period.' })
  previous!: ApiKey;
}
