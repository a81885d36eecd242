import fs from 'node:fs';
import path from 'node:path';
import { printAppSchema } from '../graphql/schema.js';
import { appSchema } from './features.js';

const target = path.resolve(process.argv[2] ?? 'schema/schema.graphql');
fs.mkdirSync(path.dirname(target), { recursive: true });
fs.writeFileSync(target, printAppSchema(await appSchema()));
process.stderr.write(`wrote ${path.relative(process.cwd(), target)}\n`);
