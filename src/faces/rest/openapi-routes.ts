import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Router, type Request, type Response } from 'express';
import type { oas31 } from 'openapi3-ts';
import { stringify as toYaml } from 'yaml';

/** Swagger UI's prebuilt files, served from the installed package: the page works with no internet. */
const SWAGGER_UI_DIRECTORY = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const SWAGGER_UI_ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

interface Representation {
  body: string;
  etag: string;
  contentType: string;
}

function representation(body: string, contentType: string): Representation {
  return { body, contentType, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"` };
}

/** Public and cacheable: clients revalidate with `If-None-Match` and get 304 while the document is unchanged. */
function serve(req: Request, res: Response, served: Representation): void {
  res.set({ 'Content-Type': served.contentType, ETag: served.etag, 'Cache-Control': 'public, no-cache' });
  if (req.fresh) {
    res.status(304).end();
    return;
  }
  res.status(200).send(served.body);
}

/** `GET /openapi.json` and `GET /openapi.yaml` on `router`: the document, serialized once at start. */
export function openApiDocumentRoutes(router: Router, document: oas31.OpenAPIObject): Router {
  const json = representation(`${JSON.stringify(document, null, 2)}\n`, 'application/json; charset=utf-8');
  const yaml = representation(toYaml(document, { aliasDuplicateObjects: false }), 'application/yaml; charset=utf-8');
  router.get('/openapi.json', (req, res) => serve(req, res, json));
  router.get('/openapi.yaml', (req, res) => serve(req, res, yaml));
  return router;
}

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>API reference</title>
  <link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <noscript>This page needs JavaScript; the document itself is at <a href="/openapi.json">/openapi.json</a>.</noscript>
  <div id="api-reference"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/init.js"></script>
</body>
</html>
`;

// No online validator badge, no remote anything: the page renders /openapi.json and nothing else.
const DOCS_INIT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#api-reference',
    validatorUrl: null,
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
  });
});
`;

/**
 * `GET /docs`: an API reference page rendered in the browser from `/openapi.json` by Swagger UI,
 * whose files come from the installed package. The Content-Security-Policy lets the page load
 * nothing from anywhere but this server (and call the API's own origin from "Try it out").
 */
export function apiDocsPageRoutes(router: Router, publicApiUrl: string): Router {
  const apiOrigin = new URL(publicApiUrl).origin;
  const policy = [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    `connect-src 'self' ${apiOrigin}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
  const page = representation(DOCS_PAGE, 'text/html; charset=utf-8');
  const init = representation(DOCS_INIT, 'text/javascript; charset=utf-8');
  router.get('/docs', (req, res) => {
    res.set('Content-Security-Policy', policy);
    serve(req, res, page);
  });
  router.get('/docs/assets/init.js', (req, res) => serve(req, res, init));
  router.get('/docs/assets/:file', (req, res, next) => {
    const file = String(req.params.file);
    const contentType = SWAGGER_UI_ASSETS[file];
    if (!contentType) return next();
    res.sendFile(path.join(SWAGGER_UI_DIRECTORY, file), { headers: { 'Content-Type': contentType, 'Cache-Control': 'public, max-age=3600' } });
  });
  return router;
}
