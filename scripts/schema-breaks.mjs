// A rule for `graphql-inspector diff` (npm run schema:breaks: schema/landed.graphql, the schema as
// last landed on main, against schema/schema.graphql). A breaking change named in
// schema/BREAKING.md (a line "- <Coordinate>: why") is intended: it is reported as dangerous with
// its reason, so the command fails only on the breaking changes nobody named.
import fs from 'node:fs';

const named = new Map(
  [...fs.readFileSync(new URL('../schema/BREAKING.md', import.meta.url), 'utf8').matchAll(/^- ([\w.()]+): (.*)$/gm)].map((match) => [match[1], match[2]]),
);

/** The coordinate as BREAKING.md names it: `Type`, `Type.field`, `Enum.VALUE`, `Type.field(arg)`. */
function coordinateOf(path) {
  const [type, field, argument] = path.split('.');
  return argument ? `${type}.${field}(${argument})` : path;
}

export default function namedBreaksAreIntended({ changes }) {
  return changes.map((change) => {
    if (change.criticality.level !== 'BREAKING' || !change.path) return change;
    const why = named.get(coordinateOf(change.path));
    if (why === undefined) return { ...change, message: `${change.message} (${coordinateOf(change.path)}: not named in schema/BREAKING.md)` };
    return { ...change, criticality: { ...change.criticality, level: 'DANGEROUS', reason: why }, message: `${change.message} (named: ${why})` };
  });
}
