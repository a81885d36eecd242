import { InvalidInputError } from '../errors/domain-errors.js';
import type { Context } from '../graphql/context.js';
import type { PresentedAuditRecord } from './audit-records.service.js';

const AUDIT_CURSOR = 'audit-records';

/**
 * A record's place in a list of records, signed: its time and chain position. The scope is the
 * arguments that chose the list, so a cursor continues only its own list (a live stream's events
 * carry the cursors of the list their filter names).
 */
export function auditCursor(context: Context, record: Pick<PresentedAuditRecord, 'position' | 'executionTime'>, scope: unknown): string {
  return context.runtime.cursors.encode(AUDIT_CURSOR, { p: record.position, t: record.executionTime.toISOString() }, scope);
}

/** The place an audit cursor names; refused when it is not one of this list's. */
export function placeOf(cursor: string, context: Context, scope: unknown, argumentName = 'cursor'): { executionTime: Date; position: number } {
  const { p, t } = context.runtime.cursors.decode<{ p?: unknown; t?: unknown }>(AUDIT_CURSOR, cursor, argumentName, scope);
  const executionTime = typeof t === 'string' ? new Date(t) : undefined;
  if (typeof p !== 'number' || !Number.isSafeInteger(p) || p < 1 || !executionTime || Number.isNaN(executionTime.getTime())) {
    throw new InvalidInputError(`${argumentName} is not a valid cursor for this list`);
  }
  return { executionTime, position: p };
}

/** The chain position a stream resumes after. */
export function positionOf(cursor: string, context: Context, scope: unknown): number {
  return placeOf(cursor, context, scope, 'after').position;
}
