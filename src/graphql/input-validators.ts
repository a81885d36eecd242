import { getNamedType, isInputObjectType, isListType, isNonNullType, type GraphQLInputType } from 'graphql';
import type { FieldProblem } from '../errors/domain-errors.js';

type InputPath = Array<string | number>;

/**
 * Where a validator runs: the path of the input object it checks (from the argument's name,
 * `["input", "users", 2]`), and whether the deployment is production, whose rules are stricter
 * (an app's redirect host).
 */
export interface ValidatorSite {
  path: InputPath;
  production: boolean;
}

/**
 * A feature's own checks of one input object type, pure (no database): run before execution on
 * whatever parts of an input coerced, beside the scalars' refusals and the length bounds, so a form
 * with several bad fields of different kinds gets one answer naming every one. The feature's
 * service runs the same checks again when it executes (and those needing the database). Parts that
 * did not coerce are undefined (and reported already): a validator checks only what is there.
 */
export type InputValidator = (value: Record<string, unknown>, site: ValidatorSite) => FieldProblem[];

const validators = new Map<string, InputValidator>();

/** Declares the checks of an input object type (by its GraphQL name). */
export function registerInputValidator(typeName: string, validate: InputValidator): void {
  validators.set(typeName, validate);
}

const label = (path: InputPath) => path.reduce<string>((name, part, index) => (typeof part === 'number' ? `${name}[${part}]` : index ? `${name}.${part}` : part), '');

/** A problem of one field of the checked object; its message names the field from inside the argument (`users[2].color ...`, `color ...`). */
export function fieldProblemAt(site: ValidatorSite, field: string, code: string, detail: string): FieldProblem {
  const path = [...site.path, field];
  return { path, code, message: `${label(path.slice(1))} ${detail}` };
}

/**
 * A service's problems, whose paths start at the argument its resolver passes (`["input", ...]`),
 * moved under the checked object's own path.
 */
export function rebased(site: ValidatorSite, problems: readonly FieldProblem[]): FieldProblem[] {
  return problems.map((problem) => ({ ...problem, path: [...site.path, ...problem.path.slice(1)] }));
}

/**
 * The problems the declared validators find in one coerced argument value (a partial one when some
 * of it did not coerce), each at its path from the argument (`["input", "users", 2, "color"]`).
 */
export function validatorProblems(type: GraphQLInputType, value: unknown, site: ValidatorSite): FieldProblem[] {
  if (value === undefined || value === null) return [];
  const inner = isNonNullType(type) ? type.ofType : type;
  if (isListType(inner)) {
    return Array.isArray(value) ? value.flatMap((item, index) => validatorProblems(inner.ofType, item, { ...site, path: [...site.path, index] })) : [];
  }
  const named = getNamedType(inner);
  if (!isInputObjectType(named) || typeof value !== 'object') return [];
  const record = value as Record<string, unknown>;
  const own = validators.get(named.name)?.(record, site) ?? [];
  const nested = Object.entries(named.getFields()).flatMap(([name, field]) => validatorProblems(field.type, record[name], { ...site, path: [...site.path, name] }));
  return [...own, ...nested];
}
