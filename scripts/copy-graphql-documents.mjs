// tsc compiles only TypeScript; the REST route table reads its .graphql documents beside the compiled modules.
import fs from 'node:fs';
import path from 'node:path';

function copy(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const source = path.join(dir, entry.name);
    if (entry.isDirectory()) copy(source);
    else if (entry.name.endsWith('.graphql')) {
      const target = path.join('dist', source);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.copyFileSync(source, target);
    }
  }
}
copy('src');
