import { ArgsType, Field, ID, InputType, Int } from 'type-graphql';
import { DateTimeResolver } from 'graphql-scalars';
import { CURSOR_MAX_LENGTH } from '../graphql/cursor.js';
import { MaxLength } from '../graphql/input-bounds.js';
import { MAX_AUDIT_PAGE_SIZE } from './audit-records.service.js';
import { AuditActionEnum, AuditActorTypeEnum, AuditMethodTypeEnum, AuditRootResourceTypeEnum } from './audit-enums.js';

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

  @Field(() => [AuditRootResourceTypeEnum], { nullable: true, description: 'Only records whose root resource is of one of these types.' })
  rootResourceTypes?: string[] | null;

  @Field(() => AuditActorTypeEnum, { nullable: true, description: 'Only records with an actor of this type.' })
  actorType?: string | null;

  @MaxLength(100)
  @Field(() => String, { nullable: true, description: 'Needs `actorType`.' })
  actorId?: string | null;

  @Field(() => AuditMethodTypeEnum, { nullable: true, description: 'Only records made this way.' })
  methodType?: string | null;

  @MaxLength(4)
  @Field(() => String, { nullable: true, description: 'Needs `methodType`.' })
  methodTruncatedToken?: string | null;

  @Field(() => [AuditActionEnum], { nullable: true, description: 'Only records of these actions.' })
  actions?: string[] | null;

  @MaxLength(20)
  @Field(() => ID, { nullable: true, description: 'Only records of changes made to this user (whose root resource is the user), as `userAuditRecords` lists them. On `auditRecordAdded`, the user themself may follow their own.' })
  userId?: string | null;
}

@ArgsType()
export class AuditRecordAddedArgs {
  @Field(() => AuditRecordFilterInput, { nullable: true, description: 'As for `auditRecords`, without `since` and `until`.' })
  filter?: AuditRecordFilterInput | null;

  @MaxLength(CURSOR_MAX_LENGTH)
  @Field(() => String, { nullable: true, description: 'A cursor of the list the filter names (an event\'s `cursor`, or an edge\'s of that list): the records appended after it come first, then the new ones, so a client reconnecting loses none.' })
  after?: string | null;
}
