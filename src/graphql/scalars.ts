import { GraphQLScalarType } from 'graphql';
import { TimeZoneResolver } from 'graphql-scalars';

/**
 * graphql-scalars' TimeZone, with its check remembered for names already found valid: the check
 * builds an Intl.DateTimeFormat (about 0.2 ms), once per user per response otherwise. Only valid
 * names are kept, and there are a few hundred of them, so the memo cannot grow without bound.
 */
function rememberingValid<T>(check: (value: T) => unknown): (value: T) => unknown {
  const valid = new Set<unknown>();
  return (value: T) => {
    if (valid.has(value)) return value;
    const result = check(value);
    valid.add(result);
    return result;
  };
}

const base = TimeZoneResolver.toConfig();
export const TimeZoneScalar = new GraphQLScalarType({
  ...base,
  serialize: rememberingValid(base.serialize),
  parseValue: rememberingValid(base.parseValue!),
});
