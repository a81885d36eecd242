import { registerEnumType } from 'type-graphql';

/**
 * A closed set of lower_snake_case strings (the REST reference's words) as a GraphQL enum whose
 * values are the same words in SCREAMING_SNAKE_CASE. The enum's internal values are the strings
 * themselves, so services and stored rows keep them; only GraphQL's wire names change. `descriptions`
 * must describe every value (the compiler checks it).
 */
/** Each closed set's GraphQL names, by enum: what a refusal of a value outside it lists. */
const closedSets = new Map<string, readonly string[]>();

export function closedSetEnum<const T extends string>(name: string, description: string, descriptions: Record<T, string>): { [K in T as Uppercase<K>]: K } {
  const values = Object.keys(descriptions) as T[];
  const enumObject = Object.fromEntries(values.map((value) => [toEnumName(value), value])) as { [K in T as Uppercase<K>]: K };
  closedSets.set(name, Object.keys(enumObject));
  registerEnumType(enumObject, {
    name,
    description,
    valuesConfig: Object.fromEntries(values.map((value) => [toEnumName(value), { description: descriptions[value] }])) as Record<Uppercase<T>, { description: string }>,
  });
  return enumObject;
}

/** The GraphQL name of a closed set's string: `sign_in` -> `SIGN_IN`. */
export function toEnumName<T extends string>(value: T): Uppercase<T> {
  return value.toUpperCase() as Uppercase<T>;
}

/** The closed set's string of a GraphQL enum name, as REST shows it: `SIGN_IN` -> `sign_in`. */
export function fromEnumName<T extends string>(name: T): Lowercase<T> {
  return name.toLowerCase() as Lowercase<T>;
}

/**
 * graphql-js refuses a value outside an enum naming only the enum (`Value "updat" does not exist
 * in "AuditAction" enum.`); for a closed set the refusal also lists the values it takes. `message`
 * is the original (whole) message, `shown` what the client gets of it (maybe cut).
 */
export function withAllowedValues(message: string, shown: string): string {
  const enumName = /does not exist in "(\w+)" enum/.exec(message)?.[1];
  const values = enumName === undefined ? undefined : closedSets.get(enumName);
  return values ? `${shown} ${enumName} takes ${values.join(', ')}.` : shown;
}
