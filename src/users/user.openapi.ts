import type { oas31 } from 'openapi3-ts';
import { InvalidInputError } from '../errors/domain-errors.js';
import { USER_ROLES } from '../auth/roles.js';
import type { ParameterDescription } from '../rest/description.js';
import { single } from '../rest/params.js';
import { resourceProperties, schemaRef } from '../rest/openapi-schemas.js';
import { USER_FIELDS, restName, restNamed, type RestNamedField } from './user.fields.js';
import { USER_FIELD_LIMITS } from './user.validation.js';

const ASSIGNABLE_ROLES = USER_ROLES.filter((role) => role !== 'owner');

/** Schemas keyed by GraphQL field name, keyed by REST name instead (user.fields.ts). */
function restProperties(schemas: { [F in RestNamedField]?: oas31.SchemaObject }): Record<string, oas31.SchemaObject> {
  return restNamed(schemas) as Record<string, oas31.SchemaObject>;
}

/** The fields a create or update body may set, with the bounds validateUserFields enforces (user.fields.ts). */
const writableProperties = restProperties({
  name: { type: 'string', minLength: 1, maxLength: USER_FIELDS.name.maxLength },
  email: { type: 'string', format: 'email', minLength: USER_FIELDS.email.minLength, maxLength: USER_FIELDS.email.maxLength, description: 'Unique in the account, ignoring case.' },
  timeZone: { type: 'string', maxLength: USER_FIELDS.timeZone.maxLength, description: 'An IANA time zone name such as "America/Lima".' },
  color: { type: 'string', minLength: 1, maxLength: USER_FIELDS.color.maxLength },
  role: { type: 'string', enum: ASSIGNABLE_ROLES, default: 'user', description: 'Nobody can be made owner through the API.' },
  description: { type: ['string', 'null'], maxLength: USER_FIELDS.description.maxLength },
  jobTitle: { type: ['string', 'null'], maxLength: USER_FIELDS.jobTitle.maxLength },
});

/** The user fields every v2 user carries (job_title is left out when unset). */
const PRESENTED_FIELDS = ['name', 'email', 'timeZone', 'color', 'role', 'avatarUrl', 'description', 'invitationSent', 'createdViaSso'] as const;

const referenceList = (type: string): oas31.SchemaObject => ({
  type: 'array',
  readOnly: true,
  items: { allOf: [schemaRef('Reference'), { type: 'object', properties: { type: { type: 'string', enum: [`${type}_reference`] } } }] },
  description: 'Always empty: the product holds none.',
});

export const userSchemas: Record<string, oas31.SchemaObject> = {
  User: {
    type: 'object',
    required: ['id', 'type', 'summary', 'self', 'html_url', ...PRESENTED_FIELDS.map(restName), 'teams', 'contact_methods', 'notification_rules'],
    properties: {
      ...resourceProperties('user'),
      id: { type: 'string', readOnly: true, pattern: '^P[A-Z0-9]{6}$' },
      ...writableProperties,
      ...restProperties({
        role: { type: 'string', enum: [...USER_ROLES] },
        jobTitle: { type: 'string', maxLength: USER_FIELDS.jobTitle.maxLength, description: 'Left out when unset.' },
        avatarUrl: { type: 'string', format: 'uri', readOnly: true },
        invitationSent: { type: 'boolean', readOnly: true },
        createdViaSso: { type: 'boolean', readOnly: true },
      }),
      teams: referenceList('team'),
      contact_methods: referenceList('email_contact_method'),
      notification_rules: referenceList('assignment_notification_rule'),
      http_cal_url: { type: 'string', format: 'uri', readOnly: true, description: 'The private iCal feed URL: a credential. Only on show, for oneself or with include[]=calendar_urls and can_update_user.' },
      web_cal_url: { type: 'string', format: 'uri', readOnly: true, description: 'The same feed as a webcal:// URL.' },
    },
  },
  UserChanges: {
    type: 'object',
    description: 'Writable user fields. Read-only and unknown fields are ignored; a `type` other than "user" is 400.',
    properties: { type: { type: 'string', enum: ['user'] }, ...writableProperties },
  },
};

export const userQueryParameter: ParameterDescription<string | undefined> = {
  name: 'query',
  in: 'query',
  description: 'Only users whose name or email contains this text (case-insensitive).',
  schema: { type: 'string', maxLength: USER_FIELD_LIMITS.searchQuery },
  read: ({ query }) => {
    const value = single(query, 'query');
    if (value !== undefined && value.length > USER_FIELD_LIMITS.searchQuery) {
      throw new InvalidInputError(`query must be at most ${USER_FIELD_LIMITS.searchQuery} characters`);
    }
    return value;
  },
};
