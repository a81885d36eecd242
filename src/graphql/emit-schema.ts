import fs from 'node:fs';
import path from 'node:path';
import { printAppSchema } from './schema.js';

const target = path.resolve(process.argv[2] ?? 'schema/schema.graphql');
fs.mkdirSync(path.dirname(target), { recursive: true });
fs.writeFileSync(target, await printAppSchema());
process.stderr.write(`wrote ${path.relative(process.cwd(), target)}\n`);
