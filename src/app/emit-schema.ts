import fs from 'node:fs';
import path from 'node:path';
import { printAppSchema } from '../graphql/schema.js';
import { appSchema } from './features.js';
import { withAccessTable } from './access-table-doc.js';

const target = path.resolve(process.argv[2] ?? 'schema/schema.graphql');
fs.mkdirSync(path.dirname(target), { recursive: true });
fs.writeFileSync(target, printAppSchema(await appSchema()));
process.stderr.write(`wrote ${path.relative(process.cwd(), target)}\n`);

// The access table, as docs/security.md renders it for security reviewers.
const securityPage = path.resolve('docs/security.md');
fs.writeFileSync(securityPage, withAccessTable(fs.readFileSync(securityPage, 'utf8')));
process.stderr.write(`wrote the access table in ${path.relative(process.cwd(), securityPage)}\n`);
