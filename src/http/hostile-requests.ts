import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { InvalidInputError, UnsupportedMediaTypeError, type DomainError } from '../errors/domain-errors.js';
import { errorEnvelope } from '../rest/envelopes.js';

export interface RequestRejection {
  kind: 'invalid_input' | 'unsupported_media_type';
  detail: string;
}

/**
 * What to answer for an error Express or its body parser raised about the request itself (a
 * status of 4xx): the client's fault, so its 4xx is kept and the text is ours, never the
 * parser's (which may quote the input). `undefined` for anything else.
 */
export function requestRejection(error: unknown): RequestRejection | undefined {
  const status = (error as { status?: unknown; statusCode?: unknown }).status ?? (error as { statusCode?: unknown }).statusCode;
  if (typeof status !== 'number' || status < 400 || status > 499) return undefined;
  const type = (error as { type?: unknown }).type;
  // Express's router decodes every path parameter in one place and raises this for a bad escape.
  if (error instanceof URIError) return { kind: 'invalid_input', detail: 'A path parameter is not valid percent-encoded UTF-8.' };
  if (type === 'entity.parse.failed') return { kind: 'invalid_input', detail: 'The request body is not valid JSON (a JSON object is expected).' };
  if (type === 'entity.too.large') return { kind: 'invalid_input', detail: 'The request body is larger than 1 MB.' };
  if (type === 'request.size.invalid') return { kind: 'invalid_input', detail: 'The request body is shorter or longer than its Content-Length.' };
  if (status === 415 || type === 'encoding.unsupported' || type === 'charset.unsupported') {
    return { kind: 'unsupported_media_type', detail: 'Request bodies must be UTF-8 JSON, uncompressed or with Content-Encoding gzip, deflate or br.' };
  }
  // zlib's errors (gzip, deflate, br) carry a code; the body did not decode as its Content-Encoding says.
  if (typeof (error as { code?: unknown }).code === 'string') {
    return { kind: 'invalid_input', detail: 'The request body does not decode with its Content-Encoding.' };
  }
  return { kind: 'invalid_input', detail: 'The request could not be read.' };
}

/** `requestRejection` as the domain error every face answers; `undefined` for anything else. */
export function rejectionError(error: unknown): DomainError | undefined {
  const rejection = requestRejection(error);
  if (!rejection) return undefined;
  return rejection.kind === 'invalid_input' ? new InvalidInputError(rejection.detail) : new UnsupportedMediaTypeError(rejection.detail);
}

function rawResponse(status: number, reason: string, kind: 'invalid_input', detail: string): string {
  const body = JSON.stringify(errorEnvelope(kind, reason, [detail]).body);
  return [
    `HTTP/1.1 ${status} ${reason}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/**
 * Node answers some requests before Express sees them: a head over its size limit (431), a
 * request it cannot parse (400), an `Expect` it does not meet (417). While the socket can still
 * take an answer, it gets the REST error envelope instead of an empty body.
 */
export function answerRefusedRequestsWithEnvelope(server: http.Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    let answer: string;
    if (error.code === 'HPE_HEADER_OVERFLOW') answer = rawResponse(431, 'Request Header Fields Too Large', 'invalid_input', 'The request line and headers together must stay under 16 KB.');
    // The server's requestTimeout / headersTimeout fired before the request was complete.
    else if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') answer = rawResponse(408, 'Request Timeout', 'invalid_input', 'The request was not received in time.');
    else answer = rawResponse(400, 'Bad Request', 'invalid_input', 'The request is not valid HTTP/1.1.');
    socket.end(answer);
  });
  server.on('checkExpectation', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const { body } = errorEnvelope('invalid_input', 'Expectation Failed', [`Expect: ${(req.headers.expect ?? '').slice(0, 40)} is not supported; only 100-continue is.`]);
    const text = JSON.stringify(body);
    res.writeHead(417, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), Connection: 'close' });
    res.end(text);
  });
}
