import { USER_ROLES, isUserRole } from '../auth/roles.js';
import type { ScimUserFieldsFragment } from '../graphql/generated/operations.js';
import { ScimInputError } from './scim.errors.js';

export const SCIM_USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const SCIM_BASE_PATH = '/scim/v2';

/** A user as the SCIM face answers it (RFC 7643 section 4.1). */
export interface ScimUser {
  schemas: string[];
  id: string;
  externalId?: string;
  userName: string;
  displayName: string;
  name: { formatted: string; givenName?: string; familyName?: string };
  emails: { value: string; type: 'work'; primary: true }[];
  title?: string;
  timezone: string;
  roles: { type: 'base'; value: string; primary: true }[];
  active: boolean;
  meta: { resourceType: 'User'; created: string; lastModified: string; location: string; version: string };
}

/**
 * The product holds one name; identity providers also read and patch its parts. They are derived
 * (the last word is the family name), so patching `name.givenName` alone keeps the family name.
 */
function nameParts(name: string): ScimUser['name'] {
  const words = name.trim().split(/\s+/);
  if (words.length < 2) return { formatted: name };
  return { formatted: name, givenName: words.slice(0, -1).join(' '), familyName: words.at(-1)! };
}

/** `meta.version` and the ETag header: a weak ETag over User.version. */
export const weakEtag = (version: string) => `W/"${version}"`;

export function presentScimUser(user: ScimUserFieldsFragment, apiUrl: string): ScimUser {
  return {
    schemas: [SCIM_USER_SCHEMA],
    id: user.id,
    ...(user.externalId != null ? { externalId: user.externalId } : {}),
    userName: user.email,
    displayName: user.name,
    name: nameParts(user.name),
    emails: [{ value: user.email, type: 'work', primary: true }],
    ...(user.jobTitle != null ? { title: user.jobTitle } : {}),
    timezone: user.timeZone,
    roles: [{ type: 'base', value: user.role.toLowerCase(), primary: true }],
    active: user.active,
    meta: {
      resourceType: 'User',
      created: user.createdAt,
      lastModified: user.updatedAt,
      location: `${apiUrl}${SCIM_BASE_PATH}/Users/${user.id}`,
      version: weakEtag(user.version),
    },
  };
}

/** The writable fields of a SCIM user, named as the GraphQL inputs name them. */
export interface ScimUserChanges {
  name?: string;
  email?: string;
  jobTitle?: string | null;
  timeZone?: string;
  externalId?: string | null;
  role?: string;
  active?: boolean;
}

const bad = (detail: string) => new ScimInputError('invalidValue', detail);

function optionalString(resource: Record<string, unknown>, attribute: string, where = attribute): string | undefined {
  const value = resource[attribute];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw bad(`${where} must be a string`);
  return value;
}

function objectOf(value: unknown, where: string): Record<string, unknown> | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) throw bad(`${where} must be an object`);
  return value as Record<string, unknown>;
}

/** Okta and Entra ID send booleans as JSON booleans or as strings in any case ("False"). */
export function scimBoolean(value: unknown, where: string): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value.trim())) return value.trim().toLowerCase() === 'true';
  throw bad(`${where} must be true or false`);
}

/** The user's email: `userName`; `emails` (primary, else work, else first) only when it changed and userName did not. */
function primaryEmail(resource: Record<string, unknown>): string | undefined {
  const emails = resource.emails;
  if (emails === undefined || emails === null) return undefined;
  if (!Array.isArray(emails)) throw bad('emails must be an array');
  const entries = emails.map((entry, index) => objectOf(entry, `emails[${index}]`) ?? {});
  const chosen = entries.find((entry) => entry.primary === true || String(entry.primary).toLowerCase() === 'true')
    ?? entries.find((entry) => String(entry.type ?? '').toLowerCase() === 'work')
    ?? entries[0];
  return chosen ? optionalString(chosen, 'value', 'emails.value') : undefined;
}

function displayNameOf(resource: Record<string, unknown>): { displayName?: string; formatted?: string; parts?: string } {
  const name = objectOf(resource.name, 'name') ?? {};
  const given = optionalString(name, 'givenName', 'name.givenName')?.trim();
  const family = optionalString(name, 'familyName', 'name.familyName')?.trim();
  const parts = [given, family].filter(Boolean).join(' ');
  return { displayName: optionalString(resource, 'displayName')?.trim() || undefined, formatted: optionalString(name, 'formatted', 'name.formatted')?.trim() || undefined, parts: parts || undefined };
}

function roleOf(resource: Record<string, unknown>): string | undefined {
  const roles = resource.roles;
  if (roles === undefined || roles === null) return undefined;
  if (!Array.isArray(roles)) throw bad('roles must be an array');
  if (roles.length === 0) return undefined;
  const entries = roles.map((entry, index) => objectOf(entry, `roles[${index}]`) ?? {});
  const chosen = entries.find((entry) => entry.primary === true) ?? entries[0]!;
  const value = optionalString(chosen, 'value', 'roles.value')?.trim().toLowerCase();
  if (value === undefined) return undefined;
  if (!isUserRole(value)) throw bad(`roles.value must be one of ${USER_ROLES.join(', ')}`);
  return value.toUpperCase();
}

/**
 * A whole resource (POST, PUT) as the user's writable fields. `displayName` wins, else
 * `name.formatted`, else `givenName familyName`. PUT replaces: an absent title or externalId is
 * cleared; an absent `active` or role is kept. Read-only and unknown attributes are ignored.
 */
export function changesFromResource(body: unknown, mode: 'create' | 'replace'): ScimUserChanges {
  const resource = objectOf(body, 'the request body');
  if (!resource) throw bad('the request body must be a SCIM User object');
  const userName = optionalString(resource, 'userName')?.trim();
  if (!userName) throw bad('userName is required');
  const names = displayNameOf(resource);
  const name = names.displayName ?? names.formatted ?? names.parts;
  if (!name) throw bad('displayName (or name.formatted, or name.givenName and name.familyName) is required');
  const changes: ScimUserChanges = {
    email: userName,
    name,
    jobTitle: optionalString(resource, 'title') ?? null,
    externalId: optionalString(resource, 'externalId') ?? null,
  };
  const timeZone = optionalString(resource, 'timezone');
  if (timeZone !== undefined) changes.timeZone = timeZone;
  const role = roleOf(resource);
  if (role !== undefined) changes.role = role;
  if (resource.active !== undefined && resource.active !== null) changes.active = scimBoolean(resource.active, 'active');
  if (mode === 'create') {
    if (changes.jobTitle === null) delete changes.jobTitle;
    if (changes.externalId === null) delete changes.externalId;
  }
  return changes;
}

/**
 * What a PATCH changed, from the resource before and after its operations: only attributes whose
 * value differs are sent, so the name follows whichever of displayName, name.formatted or the
 * name parts the identity provider changed.
 */
export function changesBetween(before: ScimUser, after: Record<string, unknown>): ScimUserChanges {
  const changes: ScimUserChanges = {};
  const userName = optionalString(after, 'userName')?.trim();
  if (!userName) throw bad('userName is required and cannot be removed');
  const email = userName.toLowerCase() !== before.userName.toLowerCase() ? userName : primaryEmail(after);
  if (email !== undefined && email !== before.userName) changes.email = email;

  const names = displayNameOf(after);
  const name = names.displayName !== before.displayName ? names.displayName
    : names.formatted !== before.name.formatted ? names.formatted
    : names.parts;
  if (names.displayName === undefined && names.formatted === undefined && names.parts === undefined) throw bad('displayName is required and cannot be removed');
  if (name !== undefined && name !== before.displayName) changes.name = name;

  const title = optionalString(after, 'title') ?? null;
  if (title !== (before.title ?? null)) changes.jobTitle = title;
  const externalId = optionalString(after, 'externalId') ?? null;
  if (externalId !== (before.externalId ?? null)) changes.externalId = externalId;
  const timeZone = optionalString(after, 'timezone');
  if (timeZone !== undefined && timeZone !== before.timezone) changes.timeZone = timeZone;
  const role = roleOf(after);
  if (role !== undefined && role.toLowerCase() !== before.roles[0]!.value) changes.role = role;
  if (after.active === undefined || after.active === null) throw bad('active cannot be removed');
  const active = scimBoolean(after.active, 'active');
  if (active !== before.active) changes.active = active;
  return changes;
}
