import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { parse, type OperationDefinitionNode } from 'graphql';
import { ConflictError, InvalidInputError, UnprocessableError, type DomainError } from '../errors/domain-errors.js';
import type { Context } from '../graphql/context.js';
import { faceOf, type FaceName } from './face.js';
import type { Logger } from '../logging/logger.js';
import { IdempotencyStore } from './idempotency-store.js';

export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;
const KEY_PATTERN = new RegExp(`^[\\x21-\\x7e]{1,${IDEMPOTENCY_KEY_MAX_LENGTH}}$`);
const WRITE_METHODS = new Set(['POST', 'PUT', 'DELETE']);
/** What a replay repeats besides status and body; request ids, rate-limit and CORS headers are the retry's own. */
const REPLAYED_HEADERS = ['content-type', 'location', 'deprecation', 'link'];
const TRANSIENT_GRAPHQL_CODES = new Set(['SERVICE_UNAVAILABLE', 'INTERNAL_SERVER_ERROR']);

interface CapturedResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export interface IdempotencyOptions {
  store: IdempotencyStore;
  /** Seals stored responses: they may carry a calendar key or URL, which the database alone must not reveal. */
  sealingKey: Buffer;
  logger: Logger;
}

function seal(key: Buffer, associated: string, response: Omit<CapturedResponse, 'status'>): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(Buffer.from(associated, 'utf8'));
  const plain = Buffer.from(JSON.stringify({ headers: response.headers, body: response.body.toString('base64') }), 'utf8');
  const encrypted = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), encrypted]);
}

function unseal(key: Buffer, associated: string, sealed: Buffer): Omit<CapturedResponse, 'status'> {
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12)).setAAD(Buffer.from(associated, 'utf8'));
  decipher.setAuthTag(sealed.subarray(12, 28));
  const plain = Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]);
  const parsed = JSON.parse(plain.toString('utf8')) as { headers: Record<string, string>; body: string };
  return { headers: parsed.headers, body: Buffer.from(parsed.body, 'base64') };
}

/** Only mutations change anything; a query (or a document Apollo will refuse) passes through untouched. */
function isGraphQLMutation(body: unknown): boolean {
  const { query, operationName } = (body ?? {}) as { query?: unknown; operationName?: unknown };
  if (typeof query !== 'string') return false;
  try {
    const operations = parse(query).definitions.filter((definition): definition is OperationDefinitionNode => definition.kind === 'OperationDefinition');
    const chosen = typeof operationName === 'string' ? operations.find((operation) => operation.name?.value === operationName) : operations.length === 1 ? operations[0] : undefined;
    return chosen?.operation === 'mutation';
  } catch {
    return false;
  }
}

/**
 * A final answer is kept and replayed; a 5xx (or a GraphQL response whose only news is an outage
 * or a masked defect) is not, so the retry runs again: nothing was written in that case.
 */
function isFinalOutcome(face: FaceName, response: CapturedResponse): boolean {
  if (response.status >= 500) return false;
  if (face !== 'graphql') return true;
  try {
    const parsed = JSON.parse(response.body.toString('utf8')) as { data?: Record<string, unknown> | null; errors?: Array<{ extensions?: { code?: string } }> };
    const transient = (parsed.errors ?? []).some((error) => TRANSIENT_GRAPHQL_CODES.has(error.extensions?.code ?? ''));
    const somethingDone = Object.values(parsed.data ?? {}).some((value) => value !== null);
    return !transient || somethingDone;
  } catch {
    return true;
  }
}

function chunkToBuffer(chunk: unknown, encoding?: unknown): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (chunk instanceof Uint8Array) return Buffer.from(chunk);
  return Buffer.from(String(chunk), typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
}

/**
 * Holds the response until `settle` has run, so a client never receives an answer whose outcome
 * is not yet stored: whoever saw the response can also see it again by retrying.
 */
function holdResponse(res: Response, settle: (response: CapturedResponse) => Promise<void>): void {
  const chunks: Buffer[] = [];
  const originalWrite = res.write;
  const originalEnd = res.end;
  res.write = function (chunk: unknown, encoding?: unknown, callback?: unknown) {
    chunks.push(chunkToBuffer(chunk, encoding));
    const done = typeof encoding === 'function' ? encoding : callback;
    if (typeof done === 'function') process.nextTick(done as () => void);
    return true;
  } as Response['write'];
  res.end = function (chunk?: unknown, encoding?: unknown, callback?: unknown) {
    const done = [chunk, encoding, callback].find((argument) => typeof argument === 'function') as (() => void) | undefined;
    if (chunk !== undefined && typeof chunk !== 'function') chunks.push(chunkToBuffer(chunk, encoding));
    res.write = originalWrite;
    res.end = originalEnd;
    const body = Buffer.concat(chunks);
    const headers: Record<string, string> = {};
    for (const name of REPLAYED_HEADERS) {
      const value = res.getHeader(name);
      if (value !== undefined) headers[name] = String(value);
    }
    void settle({ status: res.statusCode, headers, body }).finally(() => {
      if (!res.headersSent) res.setHeader('Content-Length', body.length);
      (originalEnd as (chunk: Buffer, callback?: () => void) => Response).call(res, body, done);
    });
    return res;
  } as Response['end'];
}

/**
 * `Idempotency-Key` on POST, PUT and DELETE (REST) and on `/graphql` mutations: the first outcome
 * is stored for a day, per credential; the same request again gets it back without running, the
 * same key with another request is 422, and a retry while the first still runs is 409.
 */
export function idempotentWrites(face: FaceName, options: IdempotencyOptions): RequestHandler {
  const { store, sealingKey, logger } = options;
  const reject = (res: Response, error: DomainError) => {
    if (error.kind === 'conflict') res.set('Retry-After', '1');
    faceOf(res).answer(res, error);
  };

  return async (req: Request, res: Response, next: NextFunction) => {
    const key = req.get('idempotency-key');
    if (key === undefined || !WRITE_METHODS.has(req.method)) return next();
    if (!KEY_PATTERN.test(key)) {
      return reject(res, new InvalidInputError(`The Idempotency-Key header must be 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} visible ASCII characters.`));
    }
    // A client that left before its body arrived sent no request to remember (its retry will run).
    if (!req.complete) return next();
    const { authentication } = res.locals.context as Context;
    // Without a valid credential the request is refused further on; there is nothing to remember.
    if (authentication.status !== 'authenticated') return next();
    if (face === 'graphql' && !isGraphQLMutation(req.body)) return next();

    const { principal } = authentication;
    const scope = `${principal.kind}:${principal.credentialId}`;
    const associated = `${scope}\n${key}`;
    const fingerprint = createHash('sha256').update(JSON.stringify([req.method, req.originalUrl, req.body ?? null])).digest('hex');
    try {
      const claim = await store.claim(scope, key, fingerprint);
      if (claim.outcome === 'different_request') {
        return reject(res, new UnprocessableError('This Idempotency-Key was already used for a different request; use a new key for a new request.'));
      }
      if (claim.outcome === 'running') {
        return reject(res, new ConflictError('A request with this Idempotency-Key is still being processed; retry once it has completed.'));
      }
      if (claim.outcome === 'completed') {
        let stored: Omit<CapturedResponse, 'status'>;
        try {
          stored = unseal(sealingKey, associated, claim.sealed);
        } catch {
          return reject(res, new UnprocessableError('The stored outcome of this Idempotency-Key can no longer be read (the server secret changed); use a new key.'));
        }
        res.status(claim.status).set(stored.headers).set('Idempotent-Replayed', 'true');
        res.end(stored.body);
        return;
      }
    } catch (error) {
      return next(error);
    }

    holdResponse(res, async (response) => {
      try {
        if (isFinalOutcome(face, response)) await store.complete(scope, key, response.status, seal(sealingKey, associated, response));
        else await store.release(scope, key);
      } catch (error) {
        // The answer still goes out; the key stays "running" until its lease ends, so retries get 409 meanwhile.
        logger.warn({ err: error, requestId: res.locals.requestId }, 'idempotency outcome not stored');
      }
    });
    next();
  };
}
