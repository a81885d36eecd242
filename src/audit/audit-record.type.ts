import { Field, ID, ObjectType } from 'type-graphql';
import { DateTimeResolver } from 'graphql-scalars';
import { connectionType } from '../graphql/connection.js';
import type { PresentedAuditRecord } from './audit-records.service.js';
import { AuditActionEnum, AuditMethodTypeEnum } from './audit-enums.js';
import type { MethodType } from './audit-record.js';
import type { ChangeAction } from '../db/change-journal.js';
import type { MALFORMED_ACTION } from './stored-record.js';

// Records are plain values presented by the service: read straight from the source.
@ObjectType('AuditReference', { description: 'A reference to the resource or actor a record names.', simpleResolvers: true })
export class AuditReferenceType {
  // A snapshot in a record: its `id` is this reference's own, so a normalized client cache never
  // merges it with the live object (or with the same resource named by another record).
  @Field(() => ID, { name: 'id', simple: false, description: 'This reference\'s own id, unique to its record and place in it (not the resource\'s: see `resourceId`).' })
  referenceId!: string;

  @Field(() => ID, { name: 'resourceId', simple: false, description: 'The id of the resource or actor named, e.g. a user\'s id.' })
  id!: string;

  @Field({ description: '`<type>_reference`, e.g. `user_reference`, `api_key_reference`.' })
  type!: string;

  @Field(() => String, { nullable: true, description: 'A short human-readable name of the resource as it was when the record was written.' })
  summary!: string | null;

  @Field(() => String, { nullable: true, description: 'The API URL, where the resource has one.' })
  self!: string | null;

  @Field(() => String, { nullable: true, description: 'The web app URL, where the resource has one.' })
  htmlUrl!: string | null;
}

@ObjectType('AuditExecutionContext', { description: 'Where a change came from.', simpleResolvers: true })
export class AuditExecutionContextType {
  @Field(() => String, { description: 'The id of the request that made the change (X-Request-Id), to match with logs.', nullable: true })
  requestId!: string | null;

  @Field(() => String, { nullable: true, description: 'The client address the change came from.' })
  remoteAddress!: string | null;
}

@ObjectType('AuditMethod', { description: 'How the actor was authenticated when making the change.', simpleResolvers: true })
export class AuditMethodType {
  @Field(() => AuditMethodTypeEnum, { description: 'How the actor was authenticated.' })
  type!: MethodType;

  @Field(() => String, { nullable: true, description: 'The last 4 characters of the credential used.' })
  truncatedToken!: string | null;

  @Field(() => String, { nullable: true, description: 'What was asked, e.g. `PUT /users/{id}`.' })
  description!: string | null;
}

@ObjectType('AuditField', { description: 'One field a change set or cleared.', simpleResolvers: true })
export class AuditFieldType {
  @Field({ description: 'The field\'s GraphQL name (e.g. `jobTitle`; REST names it `job_title`).' })
  name!: string;

  @Field(() => String, { nullable: true, description: 'The value after the change.' })
  value!: string | null;

  @Field(() => String, { nullable: true, description: 'The value before the change.' })
  beforeValue!: string | null;
}

@ObjectType('AuditReferences', { description: 'References a change added to or removed from a named list.', simpleResolvers: true })
export class AuditReferencesType {
  @Field({ description: 'The list\'s name, e.g. `oauth_delegations`.' })
  name!: string;

  @Field(() => [AuditReferenceType], { description: 'What the change added to the list; null when nothing.', nullable: true })
  added!: AuditReferenceType[] | null;

  @Field(() => [AuditReferenceType], { description: 'What the change removed from the list; null when nothing.', nullable: true })
  removed!: AuditReferenceType[] | null;
}

@ObjectType('AuditDetails', { description: 'What changed on the resource.', simpleResolvers: true })
export class AuditDetailsType {
  @Field(() => AuditReferenceType, { description: 'The resource changed (a snapshot).' })
  resource!: AuditReferenceType;

  @Field(() => [AuditFieldType], { description: 'The fields the change set, with their values before and after (secrets never).' })
  fields!: AuditFieldType[];

  @Field(() => [AuditReferencesType], { description: 'Lists of related objects the change added to or removed from.' })
  references!: AuditReferencesType[];
}

@ObjectType('AuditRecord', { description: 'Who changed what, when and how.', simpleResolvers: true })
export class AuditRecordType {
  @Field(() => ID, { description: 'The record\'s id.' })
  id!: string;

  @Field(() => String, { description: 'The record\'s API URL; null (records are listed, not shown one by one).', nullable: true })
  self!: string | null;

  @Field(() => DateTimeResolver, { description: 'When the change was committed.' })
  executionTime!: Date;

  @Field(() => AuditExecutionContextType, { description: 'Where the change came from.' })
  executionContext!: AuditExecutionContextType;

  @Field(() => [AuditReferenceType], { description: 'Who acted: the user, and the credential or app used (snapshots).' })
  actors!: AuditReferenceType[];

  @Field(() => AuditMethodType, { description: 'How the actors were authenticated.' })
  method!: AuditMethodType;

  @Field(() => AuditReferenceType, { description: 'The top-level resource the change belongs to, e.g. the user whose delegation was revoked (a snapshot).' })
  rootResource!: AuditReferenceType;

  @Field(() => AuditActionEnum, { description: 'What was done; `MALFORMED` for a stored record the server did not write (see `malformed`).' })
  action!: ChangeAction | typeof MALFORMED_ACTION;

  @Field(() => String, { nullable: true, description: 'Why this stored record is not in the form the server writes (it was stored by other means): shown flagged, with only its place, time and root, so the rest of the page is served; `accessctl audit verify` names its batch. Null for every record the server wrote.' })
  malformed!: string | null;

  @Field(() => AuditDetailsType, { description: 'What changed.' })
  details!: AuditDetailsType;
}

export const AuditRecordConnection = connectionType<PresentedAuditRecord>('AuditRecord', () => AuditRecordType, {
  // The records of a window are an unbounded, growing set: no count is offered (the field is absent, not always failing).
  totalCount: false,
});
