import { USER_ROLES, isUserRole, type UserRole } from '../auth/roles.js';
import { USER_FIELDS, USER_FIELD_NAMES, restName } from './user.fields.js';

export interface UserFields {
  name?: string;
  email?: string;
  timeZone?: string;
  color?: string;
  role?: UserRole;
  description?: string | null;
  jobTitle?: string | null;
  /** The identity provider's id (SCIM `externalId`); null clears it. */
  externalId?: string | null;
}

/**
 * Length bounds of the user's string inputs, from the field table (user.fields.ts): both faces
 * validate with them and the REST description publishes them. A search term longer than the longest
 * name or email can match nothing, so it shares their bound.
 */
export const USER_FIELD_LIMITS = {
  name: USER_FIELDS.name.maxLength,
  email: { min: USER_FIELDS.email.minLength, max: USER_FIELDS.email.maxLength },
  jobTitle: USER_FIELDS.jobTitle.maxLength,
  description: USER_FIELDS.description.maxLength,
  color: USER_FIELDS.color.maxLength,
  timeZone: USER_FIELDS.timeZone.maxLength,
  searchQuery: Math.max(USER_FIELDS.name.maxLength, USER_FIELDS.email.maxLength),
  externalId: USER_FIELDS.externalId.maxLength,
} as const;

// Deliberately the shape the public API accepts: local@domain.tld, no spaces.
const EMAIL_PATTERN = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/;
const TIME_ZONE_PATTERN = /^[A-Za-z][A-Za-z0-9_+\-]*(\/[A-Za-z0-9_+\-]+)*$/;

// Building an Intl.DateTimeFormat is costly (docs/BENCHMARKS.md, "Figures the code rests on"), so
// valid names are remembered; every capitalization of a name is valid too ("america/LIMA"), so
// only the first MAX_KNOWN_TIME_ZONES are kept and clients cannot grow the memo without end.
export const MAX_KNOWN_TIME_ZONES = 1_000;
const knownTimeZones = new Set<string>();

/** Names remembered as valid (at most MAX_KNOWN_TIME_ZONES). */
export function knownTimeZoneCount(): number {
  return knownTimeZones.size;
}

export function isIanaTimeZone(value: string): boolean {
  if (knownTimeZones.has(value)) return true;
  if (!TIME_ZONE_PATTERN.test(value)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
  } catch {
    return false;
  }
  if (knownTimeZones.size < MAX_KNOWN_TIME_ZONES) knownTimeZones.add(value);
  return true;
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/**
 * The colors a user is shown with on schedules, as the platform names them. A color stored before
 * this list was enforced keeps reading, and may be saved unchanged.
 */
export const USER_COLORS = [
  'purple', 'red', 'green', 'blue', 'teal', 'orange', 'brown', 'turquoise', 'dark-slate-blue', 'cayenne', 'orange-red', 'dark-orchid',
  'dark-slate-grey', 'lime', 'dark-magenta', 'lime-green', 'midnight-blue', 'deep-pink', 'dark-green', 'dark-orange', 'dark-cyan',
  'darkolive-green', 'dark-slate-gray', 'grey20', 'firebrick', 'maroon', 'crimson', 'dark-red', 'dark-goldenrod', 'chocolate',
  'medium-violet-red', 'sea-green', 'olivedrab', 'forest-green', 'dark-olive-green', 'blue-violet', 'royal-blue', 'indigo', 'slate-blue',
  'saddle-brown', 'steel-blue', 'navy', 'violet',
] as const;
const COLOR_NAMES: ReadonlySet<string> = new Set(USER_COLORS);

/** A problem of one user field: the field's (camelCase) name, a stable code, and what is wrong, without the field's name. */
export interface UserFieldProblem {
  field: keyof UserFields;
  code: 'REQUIRED' | 'INVALID' | 'TOO_LONG' | 'NOT_NULL' | 'NOT_ALLOWED';
  detail: string;
}

/** The REST name of a user field (snake_case), as REST messages name it. */
export function restUserFieldName(field: keyof UserFields): string {
  return restName(field);
}

/** The fields a write may not set to null: omitted, they keep their value; only the nullable ones are cleared by null. */
const NOT_NULLABLE = USER_FIELD_NAMES.filter((field) => !USER_FIELDS[field].nullable);

/** Every problem with the given fields at once (not the first found). */
export function userFieldProblems(fields: UserFields, options: { creating: boolean; storedColor?: string }): UserFieldProblem[] {
  const problems: UserFieldProblem[] = [];
  const problem = (field: keyof UserFields, code: UserFieldProblem['code'], detail: string) => problems.push({ field, code, detail });
  // A client's null for a field that cannot be cleared (which the types above do not admit) is
  // refused here, before any use.
  const refusedNull = NOT_NULLABLE.filter((field) => (fields[field] as unknown) === null);
  for (const field of refusedNull) problem(field, 'NOT_NULL', 'must not be null (omit it to keep the current value)');
  const given = <T>(value: T) => (value === null ? undefined : value);
  const name = given(fields.name), email = given(fields.email), timeZone = given(fields.timeZone), color = given(fields.color), role = given(fields.role);
  const { description, jobTitle } = fields;

  if (name === undefined) {
    if (options.creating && !refusedNull.includes('name')) problem('name', 'REQUIRED', 'is required');
  } else if (typeof name !== 'string' || name.trim() === '') problem('name', 'REQUIRED', 'must not be empty');
  else if (name.trim().length > USER_FIELD_LIMITS.name) problem('name', 'TOO_LONG', `must be at most ${USER_FIELD_LIMITS.name} characters`);

  if (email === undefined) {
    if (options.creating && !refusedNull.includes('email')) problem('email', 'REQUIRED', 'is required');
  } else if (typeof email !== 'string' || !EMAIL_PATTERN.test(email.trim())) problem('email', 'INVALID', 'is not a valid email address');
  else if (email.trim().length < USER_FIELD_LIMITS.email.min || email.trim().length > USER_FIELD_LIMITS.email.max) {
    problem('email', 'INVALID', `must be ${USER_FIELD_LIMITS.email.min} to ${USER_FIELD_LIMITS.email.max} characters`);
  }

  if (timeZone !== undefined && (typeof timeZone !== 'string' || timeZone.length > USER_FIELD_LIMITS.timeZone || !isIanaTimeZone(timeZone))) {
    problem('timeZone', 'INVALID', 'must be an IANA time zone name such as "America/Lima"');
  }
  if (color !== undefined && (typeof color !== 'string' || color.trim() === '' || color.length > USER_FIELD_LIMITS.color)) {
    problem('color', 'INVALID', `must be a color name of at most ${USER_FIELD_LIMITS.color} characters`);
  } else if (color !== undefined && !COLOR_NAMES.has(color) && color !== options.storedColor) {
    problem('color', 'INVALID', `must be one of ${USER_COLORS.join(', ')}`);
  }
  if (role !== undefined && !isUserRole(role)) problem('role', 'INVALID', `must be one of ${USER_ROLES.join(', ')}`);
  if (role === 'owner') problem('role', 'NOT_ALLOWED', 'owner cannot be assigned through the API');
  if (description !== undefined && description !== null && (typeof description !== 'string' || description.length > USER_FIELD_LIMITS.description)) {
    problem('description', 'TOO_LONG', `must be a string of at most ${USER_FIELD_LIMITS.description} characters, or null`);
  }
  if (jobTitle !== undefined && jobTitle !== null && (typeof jobTitle !== 'string' || jobTitle.length > USER_FIELD_LIMITS.jobTitle)) {
    problem('jobTitle', 'TOO_LONG', `must be at most ${USER_FIELD_LIMITS.jobTitle} characters`);
  }
  const { externalId } = fields;
  if (externalId !== undefined && externalId !== null && (typeof externalId !== 'string' || externalId.trim() === '' || externalId.length > USER_FIELD_LIMITS.externalId)) {
    problem('externalId', 'INVALID', `must be 1 to ${USER_FIELD_LIMITS.externalId} characters, or null`);
  }
  return problems;
}

/** Problems with the given fields, each naming its field by its REST name (`prefix` names the element in a bulk update). */
export function validateUserFields(fields: UserFields, options: { creating: boolean; prefix?: string }): string[] {
  return userFieldProblems(fields, options).map((problem) => `${options.prefix ?? ''}${restUserFieldName(problem.field)} ${problem.detail}`);
}
