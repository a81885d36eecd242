import { createRequire } from 'node:module';
import path from 'node:path';
import type { NextFunction, Request, Response } from 'express';

/**
 * The GraphQL explorer a browser gets at `GET /graphql` where the landing page is on: GraphiQL,
 * whose every script, style and font (inlined in its stylesheet) comes from this server's own
 * installed packages, so it works on a network that reaches nothing else. The page's
 * Content-Security-Policy lets it load nothing from anywhere but this server, and talk only to it
 * (HTTP and the WebSocket for subscriptions). A credential goes in its headers editor.
 */
const require = createRequire(import.meta.url);
const packageFile = (name: string, file: string) => path.join(path.dirname(require.resolve(`${name}/package.json`)), file);

const ASSETS: Record<string, { file: string; type: string }> = {
  'react.js': { file: packageFile('react', 'umd/react.production.min.js'), type: 'text/javascript; charset=utf-8' },
  'react-dom.js': { file: packageFile('react-dom', 'umd/react-dom.production.min.js'), type: 'text/javascript; charset=utf-8' },
  'graphiql.js': { file: packageFile('graphiql', 'graphiql.min.js'), type: 'text/javascript; charset=utf-8' },
  'graphiql.css': { file: packageFile('graphiql', 'graphiql.min.css'), type: 'text/css; charset=utf-8' },
  'graphql-ws.js': { file: packageFile('graphql-ws', 'umd/graphql-ws.min.js'), type: 'text/javascript; charset=utf-8' },
};

const ASSET_PREFIX = '/explorer/';

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>GraphQL explorer</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/graphql/explorer/graphiql.css">
<style>html, body, #explorer { height: 100%; margin: 0; }</style>
</head><body>
<div id="explorer">Loading the explorer...</div>
<script src="/graphql/explorer/react.js"></script>
<script src="/graphql/explorer/react-dom.js"></script>
<script src="/graphql/explorer/graphql-ws.js"></script>
<script src="/graphql/explorer/graphiql.js"></script>
<script src="/graphql/explorer/init.js"></script>
</body></html>
`;

/**
 * Queries and mutations go over HTTP, subscriptions over graphql-ws on the same path; both carry
 * the headers editor's `Authorization` (the socket in its connection_init payload).
 */
const INIT = `(function () {
  var httpUrl = location.origin + '/graphql';
  var wsUrl = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/graphql';
  function isSubscription(query, operationName) {
    var pattern = operationName ? new RegExp('subscription\\\\s+' + operationName + '\\\\b') : /(^|[}\\s])subscription\\b/;
    return pattern.test(query || '');
  }
  function authorizationOf(headers) {
    var found = {};
    Object.keys(headers || {}).forEach(function (name) { if (name.toLowerCase() === 'authorization') found.authorization = headers[name]; });
    return found;
  }
  function fetcher(params, options) {
    var headers = (options && options.headers) || {};
    if (isSubscription(params.query, params.operationName)) {
      var client = graphqlWs.createClient({ url: wsUrl, lazy: true, connectionParams: authorizationOf(headers) });
      var events = client.iterate(params);
      var ending = events.return ? events.return.bind(events) : null;
      events.return = function () { client.dispose(); return ending ? ending() : Promise.resolve({ done: true, value: undefined }); };
      return events;
    }
    return fetch(httpUrl, {
      method: 'POST',
      headers: Object.assign({ 'Content-Type': 'application/json', Accept: 'application/graphql-response+json, application/json' }, headers),
      body: JSON.stringify(params),
    }).then(function (response) { return response.json(); });
  }
  // The schema is introspected with the headers' credential: GraphiQL does so when its fetcher
  // changes, so a new Authorization (once typing pauses) gets a new fetcher, and the schema with it.
  function Explorer() {
    var generation = React.useState(0);
    var shown = React.useRef(undefined);
    var pause = React.useRef(undefined);
    var current = React.useMemo(function () { return function (params, options) { return fetcher(params, options); }; }, [generation[0]]);
    function onEditHeaders(text) {
      var authorization;
      try { authorization = authorizationOf(JSON.parse(text)).authorization; } catch (notJson) { return; }
      clearTimeout(pause.current);
      pause.current = setTimeout(function () {
        if (authorization === shown.current) return;
        shown.current = authorization;
        generation[1](function (count) { return count + 1; });
      }, 400);
    }
    return React.createElement(GraphiQL, {
      fetcher: current,
      onEditHeaders: onEditHeaders,
      defaultHeaders: JSON.stringify({ Authorization: 'Token token=<your API key>' }, null, 2),
      defaultQuery: '# Put a credential in the headers below, then run:\\n{ viewer { id name email } }\\n',
      isHeadersEditorEnabled: true,
      shouldPersistHeaders: false,
    });
  }
  ReactDOM.createRoot(document.getElementById('explorer')).render(React.createElement(Explorer));
})();
`;

function contentSecurityPolicy(req: Request): string {
  const host = req.get('host') ?? '';
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    `connect-src 'self' ws://${host} wss://${host}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** Serves the explorer page to a browser's plain `GET /graphql`, and its files; anything else goes on to the API. */
export function explorer(req: Request, res: Response, next: NextFunction): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') return next();
  if (req.path.startsWith(ASSET_PREFIX)) {
    const name = req.path.slice(ASSET_PREFIX.length);
    if (name === 'init.js') {
      res.status(200).type('text/javascript; charset=utf-8').set('Cache-Control', 'public, max-age=3600').send(INIT);
      return;
    }
    const asset = ASSETS[name];
    if (!asset) return next();
    res.sendFile(asset.file, { headers: { 'Content-Type': asset.type, 'Cache-Control': 'public, max-age=3600' } });
    return;
  }
  if (req.path !== '/' || req.query.query !== undefined || req.query.extensions !== undefined || req.accepts(['application/json', 'text/html']) !== 'text/html') return next();
  res.status(200).type('text/html; charset=utf-8').set({ 'Cache-Control': 'no-store', 'Content-Security-Policy': contentSecurityPolicy(req) }).send(PAGE);
}
