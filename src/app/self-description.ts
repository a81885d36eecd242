import type { Router } from 'express';
import type { oas31 } from 'openapi3-ts';
import { buildOpenApiDocument } from '../faces/rest/openapi-document.js';
import { apiDocsPageRoutes, openApiDocumentRoutes } from '../faces/rest/openapi-routes.js';
import { scimOpenApiRoute } from '../faces/scim/scim-face.js';
import type { AppSettings } from './app-options.js';
import { features } from './features.js';

/** The REST face's OpenAPI document, assembled from every feature's rows, plain routes and schemas. */
export function restOpenApiDocument(settings: AppSettings): oas31.OpenAPIObject {
  return buildOpenApiDocument(
    {
      routes: features.flatMap((feature) => feature.routes),
      schemas: Object.assign({}, ...features.map((feature) => feature.schemas ?? {})),
      plainOperations: features.flatMap((feature) => feature.httpRouteDescriptions ?? []),
    },
    settings,
  );
}

/** The faces' self-descriptions: public, before credentials and rate limits. Unset settings: the documents are served, the page is not. */
export function mountSelfDescriptions(router: Router, document: oas31.OpenAPIObject, settings: AppSettings): void {
  if (settings.openapiDocument ?? true) {
    openApiDocumentRoutes(router, document);
    scimOpenApiRoute(router, features.flatMap((feature) => feature.scimRoutes ?? []), settings.publicApiUrl);
  }
  if (settings.apiDocsPage ?? false) apiDocsPageRoutes(router, settings.publicApiUrl);
}
