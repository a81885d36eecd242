import type { oas31 } from 'openapi3-ts';
import type { Schema } from './description.js';

/** Shared building blocks for features' response schemas: written once, reused by every row. */
export const schemaRef = (name: string): oas31.ReferenceObject => ({ $ref: `#/components/schemas/${name}` });

/** `{id, type, summary, self, html_url}`: what every resource object starts with. */
export function resourceProperties(type: string): Record<string, Schema> {
  return {
    id: { type: 'string', readOnly: true },
    type: { type: 'string', enum: [type] },
    summary: { type: 'string', readOnly: true },
    self: { type: 'string', format: 'uri', readOnly: true, description: 'The API URL of this object.' },
    html_url: { type: 'string', format: 'uri', readOnly: true, description: 'The web URL of this object.' },
  };
}

export const referenceSchema: oas31.SchemaObject = {
  type: 'object',
  description: 'A reference to another object: `{id, type: "<type>_reference", summary, self, html_url}`.',
  required: ['id', 'type'],
  properties: { ...resourceProperties('reference'), type: { type: 'string', pattern: '_reference$' } },
};

/** `{<items>: [...], limit, offset, more, total}`: classic (offset) pagination. */
export function classicPage(itemsProperty: string, item: Schema): oas31.SchemaObject {
  return {
    type: 'object',
    required: [itemsProperty, 'limit', 'offset', 'more', 'total'],
    properties: {
      [itemsProperty]: { type: 'array', items: item },
      limit: { type: 'integer', minimum: 1, description: 'The page size served (a requested limit above the maximum is served as the maximum).' },
      offset: { type: 'integer', minimum: 0 },
      more: { type: 'boolean', description: 'Whether another page exists.' },
      total: { type: ['integer', 'null'], minimum: 0, description: 'null unless the request asked for total=true.' },
    },
  };
}

/** `{<items>: [...], limit, more, next_cursor}`: cursor pagination; `next_cursor` only while `more` is true. */
export function cursorPage(itemsProperty: string, item: Schema): oas31.SchemaObject {
  return {
    type: 'object',
    required: [itemsProperty, 'limit', 'more'],
    properties: {
      [itemsProperty]: { type: 'array', items: item },
      limit: { type: 'integer', minimum: 1 },
      more: { type: 'boolean' },
      next_cursor: { type: 'string', description: 'Present only while `more` is true: pass it as `cursor` for the next page.' },
    },
  };
}

/** `{<property>: <schema>}`, the v2 wrapper of a single object. */
export function wrapped(property: string, schema: Schema): oas31.SchemaObject {
  return { type: 'object', required: [property], properties: { [property]: schema } };
}
