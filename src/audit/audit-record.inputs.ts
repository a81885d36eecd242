import { ArgsType, Field, InputType, Int } from 'type-graphql';
import { DateTimeResolver } from 'graphql-scalars';
import { CURSOR_MAX_LENGTH } from '../graphql/cursor.js';
import { MaxLength } from '../graphql/input-bounds.js';
import { MAX_AUDIT_PAGE_SIZE } from './audit-records.service.js';

@ArgsType()
export class AuditPageArgs {
  @Field(() => Int, { defaultValue: 25, description: `Page size, 1 to ${MAX_AUDIT_PAGE_SIZE}.` })
  first!: number;

  @MaxLength(CURSOR_MAX_LENGTH)
  @Field(() => String, { nullable: true, description: 'An `endCursor` from a previous page (older records).' })
  after?: string | null;
}

@ArgsType()
export class UserAuditPageArgs extends AuditPageArgs {
  @Field(() => DateTimeResolver, { nullable: true, description: 'Start of the window; default 24 hours before `until`.' })
  since?: Date | null;

  @Field(() => DateTimeResolver, { nullable: true, description: 'End of the window (at most 31 days after `since`); default now.' })
  until?: Date | null;
}

@InputType('AuditRecordFilter', { description: 'Which records: a window of at most 31 days (default the last 24 hours) and optional filters.' })
export class AuditRecordFilterInput {
  @Field(() => DateTimeResolver, { description: 'Start of the window; default 24 hours before `until`.', nullable: true })
  since?: Date | null;

  @Field(() => DateTimeResolver, { description: 'End of the window (at most 31 days after `since`); default now.', nullable: true })
  until?: Date | null;

  @MaxLength(64)
  @Field(() => [String], { nullable: true, description: 'Plural resource types of the root resource, e.g. `users`.' })
  rootResourceTypes?: string[] | null;

  @MaxLength(64)
  @Field(() => String, { nullable: true, description: 'e.g. `user_reference`, `api_key_reference`, `app_reference`.' })
  actorType?: string | null;

  @MaxLength(100)
  @Field(() => String, { nullable: true, description: 'Needs `actorType`.' })
  actorId?: string | null;

  @MaxLength(32)
  @Field(() => String, { nullable: true, description: 'browser, oauth, api_token, identity_provider or other.' })
  methodType?: string | null;

  @MaxLength(4)
  @Field(() => String, { nullable: true, description: 'Needs `methodType`.' })
  methodTruncatedToken?: string | null;

  @MaxLength(64)
  @Field(() => [String], { nullable: true, description: 'e.g. create, update, delete, revoke.' })
  actions?: string[] | null;
}
