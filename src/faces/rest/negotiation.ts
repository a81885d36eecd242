import type { NextFunction, Request, Response } from 'express';
import { sendError } from '../../rest/envelopes.js';
import { excerpt } from '../../graphql/input-bounds.js';

/** Distinct acceptable `Accept` headers remembered per app: enough for every real client, bounded against made-up ones. */
const REMEMBERED_ACCEPT_HEADERS = 256;

/**
 * `Accept` is the versioning header: absent, `*\/*`, `application/json` or
 * `application/vnd.<vendor>+json;version=2`. Any other version (or only non-JSON types) is 406.
 */
export function acceptVersioning(vendor: string) {
  const vendorType = `application/vnd.${vendor.toLowerCase()}+json`;
  // A client sends the same header on every request: one found acceptable is not split and compared again.
  const acceptableHeaders = new Set<string>();
  return (req: Request, res: Response, next: NextFunction) => {
    const header = req.get('accept');
    if (!header || acceptableHeaders.has(header) || header.trim() === '') return next();
    let acceptable = false;
    for (const entry of header.split(',')) {
      const [type = '', ...params] = entry.split(';').map((part) => part.trim().toLowerCase());
      const version = params.find((param) => param.startsWith('version='))?.slice('version='.length).replace(/"/g, '');
      if (type === vendorType) {
        if (version !== undefined && version !== '2') {
          return sendError(res, 'not_acceptable', 'Unsupported API version', [`version ${excerpt(version)} is not supported; use ${vendorType};version=2`]);
        }
        acceptable = true;
      } else if (type === '*/*' || type === 'application/*' || type === 'application/json') {
        acceptable = true;
      }
    }
    if (!acceptable) {
      return sendError(res, 'not_acceptable', 'Not Acceptable', [`responses are application/json; send Accept: ${vendorType};version=2`]);
    }
    if (acceptableHeaders.size < REMEMBERED_ACCEPT_HEADERS) acceptableHeaders.add(header);
    next();
  };
}

function hasBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/** Request bodies are JSON only. */
export function requireJsonBody(req: Request, res: Response, next: NextFunction): void {
  if (!hasBody(req)) return next();
  if (!req.is(['application/json', 'application/*+json'])) {
    return sendError(res, 'unsupported_media_type', 'Unsupported Media Type', ['request bodies must be application/json']);
  }
  next();
}
