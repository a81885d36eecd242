import type { oas31 } from 'openapi3-ts';
import { InvalidInputError } from '../errors/domain-errors.js';
import { excerpt } from '../graphql/input-bounds.js';
import type { ParameterDescription } from '../rest/description.js';
import { schemaRef } from '../rest/openapi-schemas.js';
import { cursorPagination, cursorParameter, limitParameter, list, pathParameter, single, type Query } from '../rest/params.js';
import type { RestRoute } from '../rest/route.js';
import { operationDocument } from '../rest/route.js';
import type { ListAuditRecordsQuery, ListUserAuditRecordsQuery, RestAuditRecordFieldsFragment, RestAuditReferenceFieldsFragment } from '../graphql/generated/operations.js';
import { fromEnumName, toEnumName } from '../graphql/closed-set-enum.js';
import { ACTOR_TYPES, METHOD_TYPES } from './audit-record.js';
import { AUDIT_ACTIONS, AUDIT_ROOT_RESOURCE_TYPES } from './audit-enums.js';
import { restFieldName } from './audit-field-names.js';

const withFields = (file: string) => operationDocument(import.meta.url, file, './operations/audit-record-fields.graphql');

const ACTIONS_EXAMPLE = 'create, update, delete, revoke, sign_in, sign_in_failed';

function presentReference(reference: RestAuditReferenceFieldsFragment) {
  return { id: reference.id, type: reference.type, summary: reference.summary, self: reference.self, html_url: reference.htmlUrl };
}

type RecordToPresent = Omit<RestAuditRecordFieldsFragment, 'executionTime' | 'action' | 'method'> & {
  executionTime: string | Date;
  action: string;
  method: { type: string; truncatedToken: string | null; description: string | null };
};

/**
 * The reference's `AuditRecord`, from the fields the REST documents select (enum names such as
 * `SIGN_IN`), or from a record read for export (a Date, and the reference's strings already).
 */
export function presentAuditRecord(record: RecordToPresent) {
  return {
    id: record.id,
    self: record.self,
    execution_time: new Date(record.executionTime).toISOString(),
    execution_context: { request_id: record.executionContext.requestId, remote_address: record.executionContext.remoteAddress },
    actors: record.actors.map(presentReference),
    method: { type: fromEnumName(record.method.type), truncated_token: record.method.truncatedToken, description: record.method.description },
    root_resource: presentReference(record.rootResource),
    action: fromEnumName(record.action),
    details: {
      resource: presentReference(record.details.resource),
      fields: record.details.fields.map((field) => ({ name: restFieldName(field.name), value: field.value, before_value: field.beforeValue })),
      references: record.details.references.map((group) => ({
        name: group.name,
        added: group.added?.map(presentReference) ?? null,
        removed: group.removed?.map(presentReference) ?? null,
      })),
    },
    // Only on a record the server did not write: every other record keeps the reference's shape exactly.
    ...(record.malformed ? { malformed: record.malformed } : {}),
  };
}

function dateParameter(name: 'since' | 'until', description: string): ParameterDescription<string | null> {
  return {
    name,
    in: 'query',
    description,
    schema: { type: 'string', format: 'date-time' },
    read: ({ query }) => {
      const raw = single(query, name)?.trim();
      if (!raw) return null;
      if (!/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(raw) || Number.isNaN(Date.parse(raw))) {
        throw new InvalidInputError(`${name} must be an ISO 8601 date-time such as 2026-01-01T12:00:00Z (got ${excerpt(raw)})`);
      }
      return new Date(raw).toISOString();
    },
  };
}

const sinceParameter = dateParameter('since', 'The start of the window; default 24 hours before `until`.');
const untilParameter = dateParameter('until', 'The end of the window; default now. At most 31 days after `since`.');

function singleParameter(name: string, description: string, schema: oas31.SchemaObject, maxLength: number): ParameterDescription<string | null> {
  return {
    name,
    in: 'query',
    description,
    schema,
    read: ({ query }) => {
      const value = single(query, name)?.trim();
      if (!value) return null;
      if (value.length > maxLength) throw new InvalidInputError(`${name} must be at most ${maxLength} characters`);
      if (schema.enum && !schema.enum.includes(value)) throw new InvalidInputError(`${name} must be one of ${schema.enum.join(', ')}`);
      return value;
    },
  };
}

/** A list of a closed set's strings; REST refuses any other value (GraphQL takes them as enum names). */
function listParameter(name: string, description: string, allowed: readonly string[]): ParameterDescription<string[] | null> {
  return {
    name: `${name}[]`,
    in: 'query',
    description: `${description} Repeat the parameter or separate values with commas.`,
    explode: true,
    schema: { type: 'array', items: { type: 'string', enum: [...allowed] }, maxItems: 20 },
    read: ({ query }: { query: Query }) => {
      const values = [...new Set(list(query, name))];
      if (values.length > 20) throw new InvalidInputError(`${name}[] takes at most 20 values`);
      const bad = values.find((value) => !allowed.includes(value));
      if (bad !== undefined) throw new InvalidInputError(`${name}[] does not accept ${excerpt(bad)}; it takes ${allowed.join(', ')}`);
      return values.length ? values : null;
    },
  };
}

const rootResourceTypesParameter = listParameter('root_resource_types', 'Only records whose root resource is of these plural types, e.g. `users`.', AUDIT_ROOT_RESOURCE_TYPES);
const actionsParameter = listParameter('actions', `Only these actions (${ACTIONS_EXAMPLE}, ...).`, AUDIT_ACTIONS);
const actorTypeParameter = singleParameter('actor_type', 'Only records with an actor of this type.', { type: 'string', enum: [...ACTOR_TYPES] }, 64);
const actorIdParameter = singleParameter('actor_id', 'Only records with this actor; needs `actor_type`.', { type: 'string' }, 100);
const methodTypeParameter = singleParameter('method_type', 'Only records made this way.', { type: 'string', enum: [...METHOD_TYPES] }, 32);
const truncatedTokenParameter = singleParameter('method_truncated_token', 'Only records made with a credential ending so; needs `method_type`.', { type: 'string' }, 4);

// REST's query strings, checked against their closed sets above, as the GraphQL enum names the document takes.
const enumName = <T extends string>(value: T | null) => (value === null ? null : toEnumName(value));
const enumNames = <T extends string>(values: T[] | null) => values?.map(toEnumName) ?? null;

/** A reference as records carry it: only users have API and web URLs; a summary where one was known when recorded. */
const auditReferenceSchema: oas31.SchemaObject = {
  type: 'object',
  required: ['id', 'type'],
  properties: {
    id: { type: 'string' },
    type: { type: 'string', pattern: '_reference$' },
    summary: { type: ['string', 'null'] },
    self: { type: ['string', 'null'], format: 'uri' },
    html_url: { type: ['string', 'null'], format: 'uri' },
  },
};

const auditRecordSchema: oas31.SchemaObject = {
  type: 'object',
  required: ['id', 'execution_time', 'method', 'root_resource', 'action'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    self: { type: ['string', 'null'] },
    execution_time: { type: 'string', format: 'date-time', description: 'When the change was made, millisecond precision.' },
    execution_context: {
      type: 'object',
      properties: { request_id: { type: ['string', 'null'] }, remote_address: { type: ['string', 'null'] } },
    },
    actors: { type: 'array', items: auditReferenceSchema },
    method: {
      type: 'object',
      required: ['type'],
      properties: {
        type: { type: 'string', enum: [...METHOD_TYPES] },
        truncated_token: { type: ['string', 'null'], description: 'The last 4 characters of the credential.' },
        description: { type: ['string', 'null'] },
      },
    },
    root_resource: auditReferenceSchema,
    action: { type: 'string', description: `What was done: ${ACTIONS_EXAMPLE}, ...` },
    details: {
      type: 'object',
      required: ['resource'],
      properties: {
        resource: auditReferenceSchema,
        fields: {
          type: 'array',
          items: {
            type: 'object',
            required: ['name'],
            properties: { name: { type: 'string' }, value: { type: ['string', 'null'] }, before_value: { type: ['string', 'null'] } },
          },
        },
        references: {
          type: 'array',
          items: {
            type: 'object',
            required: ['name'],
            properties: {
              name: { type: 'string' },
              added: { type: ['array', 'null'], items: auditReferenceSchema },
              removed: { type: ['array', 'null'], items: auditReferenceSchema },
            },
          },
        },
      },
    },
  },
};

export const auditRecordSchemas: Record<string, oas31.SchemaObject> = {
  AuditRecord: auditRecordSchema,
  AuditRecordPage: {
    type: 'object',
    required: ['records', 'limit', 'more', 'next_cursor'],
    properties: {
      records: { type: 'array', items: schemaRef('AuditRecord') },
      limit: { type: 'integer', minimum: 1 },
      more: { type: 'boolean' },
      next_cursor: { type: ['string', 'null'], description: 'Pass as `cursor` for the next (older) page; null on the last page.' },
    },
  },
};

function page(data: { nodes: RestAuditRecordFieldsFragment[]; pageInfo: { hasNextPage: boolean; endCursor?: string | null } }, query: Query) {
  const { hasNextPage, endCursor } = data.pageInfo;
  return {
    status: 200,
    body: {
      records: data.nodes.map(presentAuditRecord),
      limit: cursorPagination(query).limit,
      more: hasNextPage,
      // The reference's rule for audit records: always present, null on the last page.
      next_cursor: hasNextPage && endCursor ? endCursor : null,
    },
  };
}

const ORDER = 'Newest first; cursor pagination; the window is `since`..`until` (default the last 24 hours, at most 31 days).';

/** A nullable root the executor answered: it throws when the operation failed, so here it is never null. */
function answered<T>(value: T | null | undefined): T {
  if (value == null) throw new Error('the operation answered no data and no error');
  return value;
}

export const auditRecordRoutes: RestRoute[] = [
  {
    method: 'get',
    path: '/audit/records',
    operation: withFields('./operations/list-audit-records.graphql'),
    description: {
      operationId: 'listAuditRecords',
      summary: 'List audit records',
      description: `Who changed access, when and how, across the account. ${ORDER} Owners, admins and full-access account keys.`,
      tags: ['Audit'],
      scope: 'audit_records.read',
      parameters: [limitParameter('cursor'), cursorParameter, sinceParameter, untilParameter, rootResourceTypesParameter, actorTypeParameter, actorIdParameter, methodTypeParameter, truncatedTokenParameter, actionsParameter],
      responses: { 200: { description: 'A page of records.', schema: schemaRef('AuditRecordPage') } },
      errors: [400, 403],
    },
    variables: (request) => {
      const paging = cursorPagination(request.query);
      return {
        filter: {
          since: sinceParameter.read!(request),
          until: untilParameter.read!(request),
          rootResourceTypes: enumNames(rootResourceTypesParameter.read!(request)),
          actorType: enumName(actorTypeParameter.read!(request)),
          actorId: actorIdParameter.read!(request),
          methodType: enumName(methodTypeParameter.read!(request)),
          methodTruncatedToken: truncatedTokenParameter.read!(request),
          actions: enumNames(actionsParameter.read!(request)),
        },
        first: paging.limit,
        after: paging.cursor ?? null,
      };
    },
    respond: (data: ListAuditRecordsQuery, { query }) => page(answered(data.auditRecords), query),
  } satisfies RestRoute<ListAuditRecordsQuery>,
  {
    method: 'get',
    path: '/users/:id/audit/records',
    operation: withFields('./operations/list-user-audit-records.graphql'),
    description: {
      operationId: 'listUsersAuditRecords',
      summary: 'List audit records for a user',
      description: `Records of changes made to the user (not by them): profile, role, keys, delegations, subscriptions, password, sign-ins. ${ORDER} The user themself or can_update_user.`,
      tags: ['Users', 'Audit'],
      scope: 'audit_records.read',
      parameters: [pathParameter('id', 'The id of the user.'), limitParameter('cursor'), cursorParameter, sinceParameter, untilParameter],
      responses: { 200: { description: 'A page of records.', schema: schemaRef('AuditRecordPage') } },
      errors: [400, 403, 404],
    },
    variables: (request) => {
      const paging = cursorPagination(request.query);
      return {
        userId: request.params.id,
        since: sinceParameter.read!(request),
        until: untilParameter.read!(request),
        first: paging.limit,
        after: paging.cursor ?? null,
      };
    },
    respond: (data: ListUserAuditRecordsQuery, { query }) => page(data.userAuditRecords, query),
  } satisfies RestRoute<ListUserAuditRecordsQuery>,
];
