import { USER_ROLES } from '../auth/roles.js';
import { MAX_FILTER_TERMS } from './scim.filter.js';
import { MAX_PATCH_OPERATIONS } from './scim.patch.js';
import { SCIM_USER_SCHEMA } from './scim.user.js';

export const LIST_RESPONSE_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const MAX_SCIM_PAGE_SIZE = 100;

/** What this service provider supports (RFC 7643 section 5), as identity providers read it before provisioning. */
export function serviceProviderConfig(documentationUri: string) {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
    documentationUri,
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_SCIM_PAGE_SIZE },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: true },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'Bearer token',
        description: `A provisioning token (accessctl provisioning-tokens create) or an OAuth access token with users.read and users.write, as "Authorization: Bearer <token>". Filters: eq on userName, externalId, id, emails.value, joined by and/or (at most ${MAX_FILTER_TERMS} look-ups); PATCH: at most ${MAX_PATCH_OPERATIONS} operations.`,
        specUri: 'https://www.rfc-editor.org/rfc/rfc6750',
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig' },
  };
}

type Mutability = 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly';

function attribute(name: string, description: string, options: { type?: string; required?: boolean; caseExact?: boolean; mutability?: Mutability; uniqueness?: 'none' | 'server'; multiValued?: boolean; subAttributes?: object[]; returned?: string } = {}) {
  return {
    name,
    type: options.type ?? 'string',
    multiValued: options.multiValued ?? false,
    description,
    required: options.required ?? false,
    caseExact: options.caseExact ?? false,
    mutability: options.mutability ?? 'readWrite',
    returned: options.returned ?? 'default',
    uniqueness: options.uniqueness ?? 'none',
    ...(options.subAttributes ? { subAttributes: options.subAttributes } : {}),
  };
}

/** The User schema as this product holds it: the attributes it stores; others are accepted and ignored. */
export const USER_SCHEMA_RESOURCE = {
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
  id: SCIM_USER_SCHEMA,
  name: 'User',
  description: 'A user of the account: the same user, with the same id, as on the REST and GraphQL faces.',
  attributes: [
    attribute('id', 'The user id (P + 6 characters), the same on every face.', { mutability: 'readOnly', caseExact: true, uniqueness: 'server', returned: 'always' }),
    attribute('externalId', "The identity provider's id for the user, unique in the account.", { caseExact: true, uniqueness: 'server' }),
    attribute('userName', "The user's email address, unique in the account ignoring case.", { required: true, uniqueness: 'server' }),
    attribute('displayName', "The user's name (at most 100 characters).", { required: true }),
    attribute('name', 'The name; `formatted` is the user\'s name. givenName and familyName are accepted and joined into it when displayName is absent.', {
      type: 'complex',
      subAttributes: [attribute('formatted', 'The full name.'), attribute('givenName', 'Given name.', { returned: 'never' }), attribute('familyName', 'Family name.', { returned: 'never' })],
    }),
    attribute('emails', 'One email, the primary work email, equal to userName.', {
      type: 'complex',
      multiValued: true,
      subAttributes: [attribute('value', 'The email address.'), attribute('type', '"work".'), attribute('primary', 'true.', { type: 'boolean' })],
    }),
    attribute('title', 'Job title (at most 100 characters).'),
    attribute('timezone', 'IANA time zone name; defaults to the account\'s.'),
    attribute('roles', 'The base role: [{"type": "base", "value": "<role>", "primary": true}]; owner cannot be given.', {
      type: 'complex',
      multiValued: true,
      subAttributes: [attribute('value', `${USER_ROLES.filter((role) => role !== 'owner').join(', ')}.`), attribute('type', '"base".'), attribute('primary', 'true.', { type: 'boolean' })],
    }),
    attribute('active', 'false suspends the user: every credential and session of theirs is revoked and they cannot sign in; true lets them sign in again.', { type: 'boolean' }),
  ],
  meta: { resourceType: 'Schema' },
};

export const USER_RESOURCE_TYPE = {
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
  id: 'User',
  name: 'User',
  endpoint: '/Users',
  description: 'Users of the account',
  schema: SCIM_USER_SCHEMA,
  meta: { resourceType: 'ResourceType' },
};

export function listResponse<T>(resources: T[], totalResults: number, startIndex = 1) {
  return { schemas: [LIST_RESPONSE_SCHEMA], totalResults, startIndex, itemsPerPage: resources.length, Resources: resources };
}
