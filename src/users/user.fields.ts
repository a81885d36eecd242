import type { UserRow } from './user.reads.js';
import type { UserFields } from './user.validation.js';

/** How each face and the database name one field of a user, and what the API accepts for it. */
export interface UserFieldSpec {
  /**
   * REST's name: in request and response bodies and REST's messages. The audit trail's change
   * records name a field this way too, on both faces.
   */
  rest?: string;
  /** What selects it from `users`: its column, or an expression of them. */
  column: string;
  /** Bounds, in characters, of a string the API accepts for it. */
  minLength?: number;
  maxLength?: number;
  nullable: boolean;
  /**
   * Set by a user's creation or update (UserFields): `rest` where a REST body may set it too,
   * `graphql` where only GraphQL (and SCIM, which writes through it) may.
   */
  writable?: 'rest' | 'graphql';
  /** Selected as ISO 8601 text (the read path makes it a Date). */
  timestamp?: true;
}

/**
 * Every field of a user, keyed by its GraphQL name, in the order change records list the fields a
 * write sets. A field without a column here (self, htmlUrl, other features' fields) needs only `id`.
 */
export const USER_FIELDS = {
  id: { rest: 'id', column: 'id', nullable: false },
  name: { rest: 'name', column: 'name', maxLength: 100, nullable: false, writable: 'rest' },
  email: { rest: 'email', column: 'email', minLength: 6, maxLength: 100, nullable: false, writable: 'rest' },
  timeZone: { rest: 'time_zone', column: 'time_zone', maxLength: 64, nullable: false, writable: 'rest' },
  color: { rest: 'color', column: 'color', maxLength: 32, nullable: false, writable: 'rest' },
  role: { rest: 'role', column: 'role', nullable: false, writable: 'rest' },
  description: { rest: 'description', column: 'description', maxLength: 1024, nullable: true, writable: 'rest' },
  jobTitle: { rest: 'job_title', column: 'job_title', maxLength: 100, nullable: true, writable: 'rest' },
  /** The identity provider's id (SCIM `externalId`), unique among the account's live users. */
  externalId: { rest: 'external_id', column: 'external_id', maxLength: 100, nullable: true, writable: 'graphql' },
  avatarUrl: { rest: 'avatar_url', column: 'avatar_url', nullable: false },
  invitationSent: { rest: 'invitation_sent', column: 'invitation_sent', nullable: false },
  createdViaSso: { rest: 'created_via_sso', column: 'created_via_sso', nullable: false },
  createdAt: { column: 'created_at', nullable: false, timestamp: true },
  updatedAt: { column: 'updated_at', nullable: false, timestamp: true },
  /** False while suspended. The v2 user has no such field; change records name it `active`. */
  active: { rest: 'active', column: '(suspended_at is null)', nullable: false },
  /**
   * `User.version`: updated_at in microseconds, so it changes with every change of the row; what
   * `expectedVersion` is compared with, in the statement that locks the row.
   */
  version: { column: '(floor(extract(epoch from updated_at) * 1000000))::bigint::text', nullable: false },
} as const satisfies Record<keyof UserRow, UserFieldSpec>;

type FieldsTable = typeof USER_FIELDS;
/** The fields REST names, and their REST names. */
type RestNamed = { [F in keyof FieldsTable as FieldsTable[F] extends { rest: string } ? F : never]: FieldsTable[F] extends { rest: infer R extends string } ? R : never };

/** A field REST names. */
export type RestNamedField = keyof RestNamed;

/** The fields the table marks writable; the two checks below hold them to exactly UserFields' keys. */
type WritableField = { [F in keyof FieldsTable]: FieldsTable[F] extends { writable: string } ? F : never }[keyof FieldsTable];

/** The fields a user's creation or update sets (UserFields), in the table's order. */
export const USER_FIELD_NAMES = (Object.keys(USER_FIELDS) as (keyof FieldsTable)[])
  .filter((field): field is WritableField => 'writable' in USER_FIELDS[field]) satisfies (keyof UserFields)[];

/** GraphQL field -> column, of the fields a user's creation or update sets. */
export const USER_FIELD_COLUMNS = Object.fromEntries(USER_FIELD_NAMES.map((field) => [field, USER_FIELDS[field].column])) as Record<WritableField, string> satisfies Record<keyof UserFields, string>;

/** The REST name of a field. */
export function restName<F extends keyof RestNamed>(field: F): RestNamed[F] {
  return USER_FIELDS[field].rest as RestNamed[F];
}

/** An object keyed by GraphQL field names, keyed by their REST names instead. */
export type KeyedByRestName<T> = { [F in keyof T as F extends keyof RestNamed ? RestNamed[F] : never]: T[F] };

/** `values` (keyed by GraphQL name) keyed by REST name instead, in the same order. */
export function restNamed<T extends Partial<Record<keyof RestNamed, unknown>>>(values: T): KeyedByRestName<T> {
  const named: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(values)) named[restName(field as keyof RestNamed)] = value;
  return named as KeyedByRestName<T>;
}
