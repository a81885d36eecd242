import type { oas31 } from 'openapi3-ts';
import { InvalidInputError } from '../errors/domain-errors.js';
import { USER_ROLES } from '../auth/roles.js';
import type { ParameterDescription } from '../rest/description.js';
import { single } from '../rest/params.js';
import { resourceProperties, schemaRef } from '../rest/openapi-schemas.js';
import { USER_FIELD_LIMITS } from './user.validation.js';

const ASSIGNABLE_ROLES = USER_ROLES.filter((role) => role !== 'owner');

/** The fields a create or update body may set, with the bounds validateUserFields enforces. */
const writableProperties: Record<string, oas31.SchemaObject> = {
  name: { type: 'string', minLength: 1, maxLength: USER_FIELD_LIMITS.name },
  email: { type: 'string', format: 'email', minLength: USER_FIELD_LIMITS.email.min, maxLength: USER_FIELD_LIMITS.email.max, description: 'Unique in the account, ignoring case.' },
  time_zone: { type: 'string', maxLength: USER_FIELD_LIMITS.timeZone, description: 'An IANA time zone name such as "America/Lima".' },
  color: { type: 'string', minLength: 1, maxLength: USER_FIELD_LIMITS.color },
  role: { type: 'string', enum: ASSIGNABLE_ROLES, default: 'user', description: 'Nobody can be made owner through the API.' },
  description: { type: ['string', 'null'], maxLength: USER_FIELD_LIMITS.description },
  job_title: { type: ['string', 'null'], maxLength: USER_FIELD_LIMITS.jobTitle },
};

const referenceList = (type: string): oas31.SchemaObject => ({
  type: 'array',
  readOnly: true,
  items: { allOf: [schemaRef('Reference'), { type: 'object', properties: { type: { type: 'string', enum: [`${type}_reference`] } } }] },
  description: 'Always empty: the product holds none.',
});

export const userSchemas: Record<string, oas31.SchemaObject> = {
  User: {
    type: 'object',
    required: ['id', 'type', 'summary', 'self', 'html_url', 'name', 'email', 'time_zone', 'color', 'role', 'avatar_url', 'description', 'invitation_sent', 'created_via_sso', 'teams', 'contact_methods', 'notification_rules'],
    properties: {
      ...resourceProperties('user'),
      id: { type: 'string', readOnly: true, pattern: '^P[A-Z0-9]{6}$' },
      ...writableProperties,
      role: { type: 'string', enum: [...USER_ROLES] },
      job_title: { type: 'string', maxLength: USER_FIELD_LIMITS.jobTitle, description: 'Left out when unset.' },
      avatar_url: { type: 'string', format: 'uri', readOnly: true },
      invitation_sent: { type: 'boolean', readOnly: true },
      created_via_sso: { type: 'boolean', readOnly: true },
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
