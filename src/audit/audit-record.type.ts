import { Field, ID, ObjectType } from 'type-graphql';
import { DateTimeResolver } from 'graphql-scalars';
import { connectionType } from '../graphql/connection.js';
import type { PresentedAuditRecord } from './audit-records.service.js';

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

@ObjectType('AuditExecutionContext', { simpleResolvers: true })
export class AuditExecutionContextType {
  @Field(() => String, { nullable: true })
  requestId!: string | null;

  @Field(() => String, { nullable: true, description: 'The client address the change came from.' })
  remoteAddress!: string | null;
}

@ObjectType('AuditMethod', { simpleResolvers: true })
export class AuditMethodType {
  @Field({ description: 'browser, oauth, api_token, identity_provider, or other (the operator CLI).' })
  type!: string;

  @Field(() => String, { nullable: true, description: 'The last 4 characters of the credential used.' })
  truncatedToken!: string | null;

  @Field(() => String, { nullable: true, description: 'What was asked, e.g. `PUT /users/{id}`.' })
  description!: string | null;
}

@ObjectType('AuditField', { simpleResolvers: true })
export class AuditFieldType {
  @Field()
  name!: string;

  @Field(() => String, { nullable: true, description: 'The value after the change.' })
  value!: string | null;

  @Field(() => String, { nullable: true, description: 'The value before the change.' })
  beforeValue!: string | null;
}

@ObjectType('AuditReferences', { simpleResolvers: true })
export class AuditReferencesType {
  @Field()
  name!: string;

  @Field(() => [AuditReferenceType], { nullable: true })
  added!: AuditReferenceType[] | null;

  @Field(() => [AuditReferenceType], { nullable: true })
  removed!: AuditReferenceType[] | null;
}

@ObjectType('AuditDetails', { simpleResolvers: true })
export class AuditDetailsType {
  @Field(() => AuditReferenceType)
  resource!: AuditReferenceType;

  @Field(() => [AuditFieldType])
  fields!: AuditFieldType[];

  @Field(() => [AuditReferencesType])
  references!: AuditReferencesType[];
}

@ObjectType('AuditRecord', { description: 'Who changed what, when and how (SPEC section 13).', simpleResolvers: true })
export class AuditRecordType {
  @Field(() => ID)
  id!: string;

  @Field(() => String, { nullable: true })
  self!: string | null;

  @Field(() => DateTimeResolver)
  executionTime!: Date;

  @Field(() => AuditExecutionContextType)
  executionContext!: AuditExecutionContextType;

  @Field(() => [AuditReferenceType])
  actors!: AuditReferenceType[];

  @Field(() => AuditMethodType)
  method!: AuditMethodType;

  @Field(() => AuditReferenceType)
  rootResource!: AuditReferenceType;

  @Field({ description: 'What was done, e.g. create, update, delete, revoke, sign_in.' })
  action!: string;

  @Field(() => AuditDetailsType)
  details!: AuditDetailsType;
}

export const AuditRecordConnection = connectionType<PresentedAuditRecord>('AuditRecord', () => AuditRecordType, {
  // The records of a window are an unbounded, growing set: no count is offered (the field is absent, not always failing).
  totalCount: false,
});
