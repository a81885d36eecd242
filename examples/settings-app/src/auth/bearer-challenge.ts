/** The parts of a `WWW-Authenticate: Bearer ...` challenge an app acts on (RFC 6750, RFC 9470). */
export interface BearerChallenge {
  error?: string;
  /** How recent the sign-in must be, in seconds (RFC 9470's step-up). */
  maxAge?: number;
}

export const STEP_UP_ERROR = 'insufficient_user_authentication';

export function parseBearerChallenge(header: string | null): BearerChallenge {
  if (!header || !/^Bearer\b/i.test(header)) return {};
  const parameters = new Map<string, string>();
  for (const match of header.matchAll(/([a-z_]+)=(?:"([^"]*)"|([^\s,]+))/gi)) {
    parameters.set(match[1]!.toLowerCase(), match[2] ?? match[3] ?? '');
  }
  const maxAge = parameters.has('max_age') ? Number(parameters.get('max_age')) : undefined;
  return { error: parameters.get('error'), ...(maxAge !== undefined && Number.isFinite(maxAge) ? { maxAge } : {}) };
}
