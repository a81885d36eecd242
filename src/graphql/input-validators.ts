import { getNamedType, isInputObjectType, isListType, isNonNullType, type GraphQLInputType } from 'graphql';
import type { FieldProblem } from '../errors/domain-errors.js';

/**
 * A feature's own checks of one input object type, pure (no database): run before execution on
 * whatever parts of an input coerced, beside the scalars' refusals and the length bounds, so a form
 * with several bad fields of different kinds gets one answer naming every one. The feature's
 * service runs the same checks again when it executes (and those needing the database).
 */
export type InputValidator = (value: Record<string, unknown>) => Array<{ field: string; code: string; detail: string }>;

const validators = new Map<string, InputValidator>();

/** Declares the checks of an input object type (by its GraphQL name). */
export function registerInputValidator(typeName: string, validate: InputValidator): void {
  validators.set(typeName, validate);
}

type InputPath = Array<string | number>;

const label = (path: InputPath) => path.reduce<string>((name, part, index) => (typeof part === 'number' ? `${name}[${part}]` : index ? `${name}.${part}` : part), '');

/**
 * The problems the declared validators find in one coerced argument value (a partial one when some
 * of it did not coerce: those parts are undefined, and already reported), each at its path from the
 * argument (`["input", "users", 2, "color"]`).
 */
export function validatorProblems(type: GraphQLInputType, value: unknown, path: InputPath): FieldProblem[] {
  if (value === undefined || value === null) return [];
  const inner = isNonNullType(type) ? type.ofType : type;
  if (isListType(inner)) {
    return Array.isArray(value) ? value.flatMap((item, index) => validatorProblems(inner.ofType, item, [...path, index])) : [];
  }
  const named = getNamedType(inner);
  if (!isInputObjectType(named) || typeof value !== 'object') return [];
  const record = value as Record<string, unknown>;
  const own = (validators.get(named.name)?.(record) ?? []).map((problem) => {
    const at = [...path, problem.field];
    // Messages name the field from inside the argument, as the service's do (`users[2].color ...`, `color ...`).
    return { path: at, code: problem.code, message: `${label(at.slice(1))} ${problem.detail}` };
  });
  const nested = Object.entries(named.getFields()).flatMap(([name, field]) => validatorProblems(field.type, record[name], [...path, name]));
  return [...own, ...nested];
}
