import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type { HttpRouteDeps } from '../app/feature.js';
import { InvalidInputError } from '../errors/domain-errors.js';
import type { PlainOperationDescription } from '../rest/description.js';
import { sendError, sendJson } from '../rest/envelopes.js';
import { MAX_REPORTED_CREDENTIAL_LENGTH, MAX_REPORTED_CREDENTIALS, reportedCredentials, revokeReportedCredentials } from './credentials-revocation.service.js';

export const CREDENTIALS_REVOKE_PATH = '/credentials/revoke';
/** A full list of the longest strings fits; anything larger is refused before it is parsed. */
const BODY_LIMIT_BYTES = MAX_REPORTED_CREDENTIALS * (MAX_REPORTED_CREDENTIAL_LENGTH + 4) + 64;

const readBody = express.text({ type: () => true, limit: BODY_LIMIT_BYTES });

/**
 * `POST /credentials/revoke`: no credential (possession is the right), so a plain route beside the
 * API, on the client address's budget. It answers 202 with no body whatever it found; only a bad
 * body is told apart (400, nothing revoked).
 */
export function credentialsHttpRoutes(router: Router, deps: HttpRouteDeps): void {
  router.post(CREDENTIALS_REVOKE_PATH, deps.limitPerAddress, (req: Request, res: Response, next: NextFunction) => {
    readBody(req, res, (error?: unknown) => {
      if (error) return sendError(res, 'invalid_input', 'Invalid Input Provided', [bodyProblem(error)]);
      next();
    });
  }, async (req: Request, res: Response, next: NextFunction) => {
    try {
      let parsed: unknown;
      try {
        parsed = JSON.parse(typeof req.body === 'string' ? req.body : '');
      } catch {
        throw new InvalidInputError('the body must be JSON: {"credentials": ["...", ...]}');
      }
      const secrets = reportedCredentials(parsed);
      const transactions = deps.database.transactions.onBehalfOf({
        face: 'server',
        requestId: res.locals.requestId as string | undefined,
        remoteAddress: req.ip,
        description: 'credential reported',
      });
      await revokeReportedCredentials(deps.database.em(), transactions, secrets);
      sendJson(res, 202, undefined);
    } catch (error) {
      if (error instanceof InvalidInputError) return sendError(res, 'invalid_input', error.message, error.details);
      next(error);
    }
  });
}

function bodyProblem(error: unknown): string {
  const type = (error as { type?: unknown }).type;
  if (type === 'entity.too.large') return `the body must be at most ${BODY_LIMIT_BYTES} bytes`;
  return 'the body could not be read as JSON';
}

export const credentialsHttpRouteDescriptions: PlainOperationDescription[] = [
  {
    method: 'post',
    path: CREDENTIALS_REVOKE_PATH,
    server: 'api',
    operation: {
      operationId: 'revokeCredentials',
      summary: 'Revoke leaked credentials by possession',
      description:
        'Holding a secret is the right to end it: no Authorization header. Every live API key, provisioning token, and OAuth access or refresh token '
        + 'of this service among `credentials` is revoked (a token with its whole delegation) and refused from the next request on, on every instance; '
        + 'each revocation is an audit record (method `other`, description `credential reported`). The answer is 202 with no body whatever was found, '
        + 'so it tells nobody which strings were valid. Requests count against the client address\'s budget (429 with `Retry-After` past it).',
      tags: ['Credentials'],
      security: [],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['credentials'],
              properties: {
                credentials: {
                  type: 'array',
                  minItems: 1,
                  maxItems: MAX_REPORTED_CREDENTIALS,
                  items: { type: 'string', minLength: 1, maxLength: MAX_REPORTED_CREDENTIAL_LENGTH },
                  description: 'Secrets found where they should not be (a repository, a log, a paste).',
                },
              },
            },
          },
        },
      },
      responses: {
        202: { description: 'Accepted: whatever was live among them is revoked. No body.' },
        400: { description: 'The body is not `{"credentials": [1 to 1000 strings of 1 to 512 characters]}`, or too large; nothing was revoked.', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
        429: { description: 'Too many requests from this client address.', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
      },
    },
  },
];
