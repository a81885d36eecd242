// Breaking changes of schema/schema.graphql against schema/landed.graphql (the schema as last
// landed on main), each of which must be named in schema/BREAKING.md (a line "- <Coordinate>: why").
// Exits 1 on an unnamed break. graphql-js's own comparison (findBreakingChanges): no extra
// dependency, well under a second in CI.
import fs from 'node:fs';
import { buildSchema, findBreakingChanges } from 'graphql';

const read = (file) => fs.readFileSync(new URL(`../schema/${file}`, import.meta.url), 'utf8');
const landed = buildSchema(read('landed.graphql'));
const current = buildSchema(read('schema.graphql'));
const named = new Set([...read('BREAKING.md').matchAll(/^- ([\w.()]+):/gm)].map((match) => match[1]));

/** The coordinate a change is about: `Type.field`, `Type.field(arg)`, `Enum.VALUE` or `Type`. */
function coordinateOf(description) {
  const argument = /^(\w+)\.(\w+) arg (\w+)/.exec(description);
  if (argument) return `${argument[1]}.${argument[2]}(${argument[3]})`;
  const inEnum = /^(\w+) was removed from enum type (\w+)/.exec(description);
  if (inEnum) return `${inEnum[2]}.${inEnum[1]}`;
  return /^([\w.]+)/.exec(description)?.[1] ?? description;
}

const breaks = findBreakingChanges(landed, current).map((change) => ({ ...change, coordinate: coordinateOf(change.description) }));
const unnamed = breaks.filter((change) => !named.has(change.coordinate));
for (const change of breaks) process.stdout.write(`${named.has(change.coordinate) ? 'named  ' : 'UNNAMED'} ${change.type}: ${change.description}\n`);
if (unnamed.length) {
  process.stderr.write(`\n${unnamed.length} breaking change(s) not named in schema/BREAKING.md; name each intended one there ("- ${unnamed[0].coordinate}: why"), or keep the old field (deprecated).\n`);
  process.exit(1);
}
process.stdout.write(`${breaks.length} breaking change(s), all named in schema/BREAKING.md.\n`);
