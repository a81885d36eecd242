import {
  GraphQLError,
  Kind,
  coerceInputValue,
  typeFromAST,
  TypeInfo,
  getNamedType,
  getNullableType,
  getOperationAST,
  getVariableValues,
  isInputObjectType,
  isInputType,
  isInterfaceType,
  isListType,
  isObjectType,
  isScalarType,
  valueFromAST,
  visit,
  visitWithTypeInfo,
  type ArgumentNode,
  type DocumentNode,
  type GraphQLArgument,
  type GraphQLInputField,
  type GraphQLInputObjectType,
  type GraphQLInputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { Extensions } from 'type-graphql';
import { InvalidInputError, type FieldProblem } from '../errors/domain-errors.js';
import { withAllowedValues } from './closed-set-enum.js';
import { validatorProblems } from './input-validators.js';

/**
 * Whether the deployment's stricter rules (production) apply to the features' own checks when they
 * join an answer here; their services apply the deployment's rules again when they execute.
 */
export interface InputCheckSetting {
  production: boolean;
}

const DEVELOPMENT_RULES: InputCheckSetting = { production: false };

/**
 * Every string a client sends is bounded before any resolver (and so any SQL) runs, and strings
 * PostgreSQL cannot store are refused with the field named. Both faces go through here: Apollo
 * before execution, the REST executor before it calls `execute`.
 *
 * A `String` argument or input field declares its own bound (`@MaxLength`, next to its meaning);
 * other scalars carry one bound per type below. `assertEveryStringInputBounded` refuses to start
 * a schema with an undeclared one, so a new field cannot slip through unbounded.
 */
export const MAX_LENGTH_EXTENSION = 'maxLength';

/** Declares the length bound of a `String` input field or argument (`@ArgsType` field). */
export function MaxLength(max: number) {
  return Extensions({ [MAX_LENGTH_EXTENSION]: max });
}

/** Public ids are 7 characters; the bound leaves room for other id formats without letting a query carry a document. */
export const ID_MAX_LENGTH = 64;

/** Bounds of scalars whose values are all short by nature; `String` has none: each field declares its own. */
const SCALAR_BOUNDS: Record<string, number> = {
  ID: ID_MAX_LENGTH,
  DateTime: 64,
  EmailAddress: 254,
  TimeZone: 64,
  URL: 2048,
};

/** Scalars whose values are not strings, or are checked by their own coercion before they get here. */
const NON_STRING_SCALARS = new Set(['Int', 'Float', 'Boolean']);

const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** `undefined`, or why PostgreSQL cannot store the text (NUL, or UTF-16 that is not valid Unicode). */
export function unstorableCharacter(value: string): string | undefined {
  if (value.includes('\u0000')) return 'contains a NUL character (U+0000)';
  if (UNPAIRED_SURROGATE.test(value)) return 'contains an unpaired UTF-16 surrogate';
  return undefined;
}

/**
 * A short, printable excerpt of a client's value for an error message: never the whole value
 * (it may be megabytes, or nested 10,000 levels deep), never control characters.
 */
export function excerpt(value: unknown, max = 40): string {
  if (typeof value === 'string') {
    const shown = value.slice(0, max).replace(/[\u0000-\u001f\u007f\ud800-\udfff]/g, '\uFFFD');
    return JSON.stringify(shown + (value.length > max ? '…' : ''));
  }
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  if (typeof value === 'object') return 'an object';
  return String(value).slice(0, max);
}

/** Messages that quote a client's value (graphql-js and scalars quote strings whole) are cut to this many characters. */
export const MAX_ERROR_MESSAGE_LENGTH = 300;

export function boundedMessage(message: string): string {
  if (message.length <= MAX_ERROR_MESSAGE_LENGTH) return message;
  return `${message.slice(0, MAX_ERROR_MESSAGE_LENGTH).replace(/[\ud800-\udbff]$/, '')}… (cut)`;
}

function boundOf(position: GraphQLArgument | GraphQLInputField, type: GraphQLInputType): number | undefined {
  const declared = position.extensions?.[MAX_LENGTH_EXTENSION];
  if (typeof declared === 'number') return declared;
  return SCALAR_BOUNDS[getNamedType(type).name];
}

function stringProblem(value: string, bound: number | undefined): string | undefined {
  const unstorable = unstorableCharacter(value);
  if (unstorable) return unstorable;
  if (bound !== undefined && value.length > bound) return `must be at most ${bound} characters (got ${value.length})`;
  return undefined;
}

/** Where a value sits: the argument's name, then field names and list indexes. Named only when a problem is found. */
type InputPath = (string | number)[];

function pathName(path: InputPath): string {
  let name = String(path[0]);
  for (let i = 1; i < path.length; i++) name += typeof path[i] === 'number' ? `[${path[i]}]` : `.${path[i]}`;
  return name;
}

/** What a walk found: a message per problem, and the same problems per input field (for forms). */
interface InputProblems {
  messages: string[];
  fields: FieldProblem[];
}

/** Checks a coerced value at one input position (its type and the bound of its strings). */
type InputCheck = (value: unknown, path: InputPath, problems: InputProblems) => void;

/**
 * The checks of an input object type's fields, built once per type: a bulk input (100 users) is
 * walked without looking its fields, their types and bounds up again for every element.
 */
const inputObjectChecks = new WeakMap<GraphQLInputObjectType, InputCheck>();

/** Walks a coerced value along its input type; input types are not recursive here, so neither is the walk's depth unbounded. */
function inputCheck(type: GraphQLInputType, bound: number | undefined): InputCheck {
  const nullable = getNullableType(type);
  if (isListType(nullable)) {
    const element = inputCheck(nullable.ofType, bound);
    return (value, path, problems) => {
      if (value === null || value === undefined) return;
      if (!Array.isArray(value)) return element(value, path, problems);
      for (let index = 0; index < value.length; index++) {
        path.push(index);
        element(value[index], path, problems);
        path.pop();
      }
    };
  }
  if (isInputObjectType(nullable)) return inputObjectCheck(nullable);
  return (value, path, problems) => {
    if (typeof value !== 'string') return;
    const problem = stringProblem(value, bound);
    if (!problem) return;
    const message = `${pathName(path)} ${problem}`;
    problems.messages.push(message);
    problems.fields.push({ path: [...path], message, code: problem.startsWith('must be at most') ? 'TOO_LONG' : 'INVALID' });
  };
}

function inputObjectCheck(type: GraphQLInputObjectType): InputCheck {
  const known = inputObjectChecks.get(type);
  if (known) return known;
  const fields: { name: string; check: InputCheck }[] = [];
  const check: InputCheck = (value, path, problems) => {
    if (value === null || value === undefined) return;
    for (const field of fields) {
      path.push(field.name);
      field.check((value as Record<string, unknown>)[field.name], path, problems);
      path.pop();
    }
  };
  // Remembered before its fields are built, so a type reached again through its own fields ends the recursion.
  inputObjectChecks.set(type, check);
  for (const field of Object.values(type.getFields())) fields.push({ name: field.name, check: inputCheck(field.type, boundOf(field, field.type)) });
  return check;
}

interface ArgumentSite { node: ArgumentNode; argument: GraphQLArgument; check: InputCheck }

/**
 * Where an operation passes arguments, in document order, with each argument's definition. It
 * depends on the document alone, not on the variables, and finding it walks the whole document
 * with type information; the REST facade runs the same few documents (and Apollo keeps parsed
 * ones), so it is remembered per schema, document and operation (weakly: forgotten with them).
 */
const argumentSites = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, WeakMap<OperationDefinitionNode, ArgumentSite[]>>>();

function argumentSitesOf(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): ArgumentSite[] {
  let byDocument = argumentSites.get(schema);
  if (!byDocument) argumentSites.set(schema, (byDocument = new WeakMap()));
  let byOperation = byDocument.get(document);
  if (!byOperation) byDocument.set(document, (byOperation = new WeakMap()));
  const known = byOperation.get(operation);
  if (known) return known;
  const sites: ArgumentSite[] = [];
  const typeInfo = new TypeInfo(schema);
  const definitions = document.definitions.filter((definition) => definition === operation || definition.kind === Kind.FRAGMENT_DEFINITION);
  for (const definition of definitions) {
    visit(definition, visitWithTypeInfo(typeInfo, {
      Argument(node) {
        const argument = typeInfo.getArgument();
        if (argument) sites.push({ node, argument, check: inputCheck(argument.type, boundOf(argument, argument.type)) });
      },
    }));
  }
  byOperation.set(operation, sites);
  return sites;
}

/**
 * The problems with the values an operation passes to its fields' arguments: variables that do
 * not coerce to their types (graphql-js's messages, whose quoting of the value is bounded), then
 * strings, literals and variables alike, against their bounds; empty when there is nothing to
 * refuse. Reporting coercion here, rather than leaving it to execution, keeps a scalar that
 * trips over a hostile value (a 10,000-level array where a time zone belongs) a client error.
 */
export function operationInputProblems(schema: GraphQLSchema, document: DocumentNode, operationName: string | null | undefined, rawVariables: Record<string, unknown> | null | undefined): string[] {
  return operationInputErrors(schema, document, operationName, rawVariables).problems;
}

function operationInputErrors(schema: GraphQLSchema, document: DocumentNode, operationName: string | null | undefined, rawVariables: Record<string, unknown> | null | undefined, setting = DEVELOPMENT_RULES) {
  const operation = getOperationAST(document, operationName);
  return operation ? inputsOf(schema, document, operation, rawVariables, setting) : { problems: [] };
}

/**
 * Another coercion of an operation's variables, compiled for it: the values graphql-js's
 * `getVariableValues` would give whenever it accepts them, undefined where it does not.
 */
export type CompiledCoercion = (rawVariables: Record<string, unknown>) => Record<string, unknown> | undefined;

function inputsOf(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  rawVariables: Record<string, unknown> | null | undefined,
  setting: InputCheckSetting,
  compiledCoercion?: CompiledCoercion,
): { problems: string[]; fields?: FieldProblem[]; variables?: Record<string, unknown> } {
  let variables = compiledCoercion?.(rawVariables ?? {});
  const problems: InputProblems = { messages: [], fields: [] };
  let coercionFailed = false;
  if (!variables) {
    // graphql-js's own coercion, for its messages (and whatever the compiled one refused).
    const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], rawVariables ?? {}, { maxErrors: 5 });
    if (coerced.errors) {
      coercionFailed = true;
      problems.messages.push(...coerced.errors.map((error) => withAllowedValues(error.message, boundedMessage(error.message))));
      problems.fields.push(...variableFieldProblems(schema, document, operation, rawVariables ?? {}));
      // What did coerce is still checked below, so every problem of the input is answered at once.
      variables = partiallyCoerced(schema, operation, rawVariables ?? {});
    } else {
      variables = coerced.coerced;
    }
  }
  const sites = argumentSitesOf(schema, document, operation);
  for (const site of sites) site.check(valueFromAST(site.node.value, site.argument.type, variables), [site.node.name.value], problems);
  // The features' own checks join only an answer that refuses the input anyway: alone, the service
  // answers them when it executes, in its face's words.
  if (problems.messages.length) addValidatorProblems(sites, variables, setting, problems);
  if (coercionFailed) return { problems: problems.messages, fields: problems.fields };
  return { problems: problems.messages, fields: problems.fields, variables };
}

/** Each variable as far as it coerces: the parts that do not are left out (undefined), and reported already. */
function partiallyCoerced(schema: GraphQLSchema, operation: OperationDefinitionNode, rawVariables: Record<string, unknown>): Record<string, unknown> {
  const partial: Record<string, unknown> = {};
  for (const definition of operation.variableDefinitions ?? []) {
    const name = definition.variable.name.value;
    const type = typeFromAST(schema, definition.type);
    if (!type || !isInputType(type) || !(name in rawVariables)) continue;
    partial[name] = coerceInputValue(rawVariables[name], type, () => {});
  }
  return partial;
}

/**
 * The declared validators' problems at paths the scalars and bounds did not report already (a value
 * over its bound is not also called invalid); a validator may name several problems of one field.
 */
function addValidatorProblems(sites: readonly ArgumentSite[], variables: Record<string, unknown>, setting: InputCheckSetting, problems: InputProblems): void {
  const reported = new Set(problems.fields.map((field) => JSON.stringify(field.path)));
  for (const site of sites) {
    const value = valueFromAST(site.node.value, site.argument.type, variables);
    for (const problem of validatorProblems(site.argument.type, value, { path: [site.node.name.value], production: setting.production })) {
      if (reported.has(JSON.stringify(problem.path))) continue;
      problems.fields.push(problem);
      problems.messages.push(problem.message);
    }
  }
}

/**
 * The values of variables that do not coerce, per input field: each problem's path starts at the
 * argument the variable is given to (`createUser(input: $input)`: `["input", "email"]`), or at the
 * variable's name where it is not an argument's whole value. Only when coercion failed (rare).
 */
function variableFieldProblems(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, rawVariables: Record<string, unknown>): FieldProblem[] {
  const argumentOf = new Map<string, string>();
  for (const site of argumentSitesOf(schema, document, operation)) {
    if (site.node.value.kind === Kind.VARIABLE) argumentOf.set(site.node.value.name.value, site.node.name.value);
  }
  const fields: FieldProblem[] = [];
  for (const definition of operation.variableDefinitions ?? []) {
    const name = definition.variable.name.value;
    const type = typeFromAST(schema, definition.type);
    if (!type || !isInputType(type) || !(name in rawVariables)) continue;
    coerceInputValue(rawVariables[name], type, (path, _value, error) => {
      if (fields.length >= 20) return;
      // A missing required field is reported at its object: the path names the field itself.
      const missing = /^Field "([^"]+)" of required type .* was not provided\.$/.exec(error.message)?.[1];
      const fieldPath = [argumentOf.get(name) ?? name, ...path, ...(missing ? [missing] : [])];
      const message = `${pathName(fieldPath)}: ${error.message}`;
      fields.push({ path: fieldPath, code: missing ? 'REQUIRED' : 'INVALID', message: withAllowedValues(message, boundedMessage(message)) });
    });
  }
  return fields;
}

/** The same problems as an error of the table's `invalid_input` kind (400/2001, `BAD_USER_INPUT`). */
export function assertOperationInputsAcceptable(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  rawVariables: Record<string, unknown> | null | undefined,
  setting = DEVELOPMENT_RULES,
): void {
  const { problems, fields } = operationInputErrors(schema, document, operationName, rawVariables, setting);
  if (problems.length) throw new InvalidInputError(problems, undefined, fields);
}

/**
 * `assertOperationInputsAcceptable` for an operation already picked out of its document, answering
 * the variables as it coerced them (graphql-js's `getVariableValues`, or the operation's compiled
 * coercion where it accepts them), so a caller that executes the operation itself need not coerce
 * them a second time.
 */
export function acceptableOperationInputs(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  rawVariables: Record<string, unknown> | null | undefined,
  setting: InputCheckSetting,
  compiledCoercion?: CompiledCoercion,
): Record<string, unknown> {
  const { problems, fields, variables } = inputsOf(schema, document, operation, rawVariables, setting, compiledCoercion);
  if (problems.length || !variables) throw new InvalidInputError(problems, undefined, fields);
  return variables;
}

/** Thrown from Apollo's `didResolveOperation`: answered as HTTP 400 with BAD_USER_INPUT by the error table. */
export function inputProblemsAsGraphQLError(error: InvalidInputError): GraphQLError {
  return new GraphQLError(error.details[0] ?? error.message, { originalError: error, extensions: { http: { status: 400 } } });
}

/** Every `String` input position of the schema with no declared bound; the server refuses to start with any. */
export function unboundedStringInputs(schema: GraphQLSchema): string[] {
  const unbounded: string[] = [];
  const check = (position: GraphQLArgument | GraphQLInputField, where: string) => {
    const named = getNamedType(position.type);
    if (!isScalarType(named) || NON_STRING_SCALARS.has(named.name) || !isInputType(named)) return;
    if (boundOf(position, position.type) === undefined) unbounded.push(where);
  };
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith('__')) continue;
    if (isInputObjectType(type)) {
      for (const field of Object.values(type.getFields())) check(field, `${type.name}.${field.name}`);
    } else if (isObjectType(type) || isInterfaceType(type)) {
      for (const field of Object.values(type.getFields())) {
        for (const argument of field.args) check(argument, `${type.name}.${field.name}(${argument.name}:)`);
      }
    }
  }
  return unbounded;
}
