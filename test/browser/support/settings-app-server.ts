import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';

const APP_DIR = path.resolve(import.meta.dirname, '../../../examples/settings-app');
const CONTENT_TYPES: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };

/** Bundles examples/settings-app (React, Apollo Client, graphql-ws, oauth4webapi) into one directory, as a deployment would serve it. */
export async function buildSettingsApp(): Promise<string> {
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'settings-app-'));
  await build({
    entryPoints: [path.join(APP_DIR, 'src/main.tsx')],
    outfile: path.join(outDir, 'app.js'),
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    jsx: 'automatic',
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'error',
  });
  for (const file of ['index.html', 'app.css']) fs.copyFileSync(path.join(APP_DIR, file), path.join(outDir, file));
  return outDir;
}

export interface SettingsAppServer {
  /** The app's origin: another origin than the API's. */
  origin: string;
  /** What `/config.json` answers (the API's URL and the registered app's client id). */
  configure(config: { apiUrl: string; clientId: string }): void;
  close(): Promise<void>;
}

/** A static server for the built app on its own port: its files, `/config.json`, and index.html for every other path (the app routes by path). */
export async function serveSettingsApp(dir: string): Promise<SettingsAppServer> {
  let config: unknown = null;
  const server = http.createServer((request, response) => {
    const pathname = new URL(request.url ?? '/', 'http://app').pathname;
    if (pathname === '/config.json') {
      response.writeHead(config ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(config));
      return;
    }
    const file = path.join(dir, path.basename(pathname));
    const served = pathname.lastIndexOf('/') === 0 && fs.existsSync(file) && fs.statSync(file).isFile() ? file : path.join(dir, 'index.html');
    response.writeHead(200, { 'content-type': CONTENT_TYPES[path.extname(served)] ?? 'application/octet-stream' }).end(fs.readFileSync(served));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    configure(next) {
      config = next;
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
