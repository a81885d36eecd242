/**
 * Paths that carry a credential or a bearer secret in a segment: the calendar feed key
 * (`/private/<key>/feed`), the sign-in interaction id (`/oauth/interaction/<uid>`) and the resume
 * path of an authorization (`/oauth/authorize/<uid>`). Each is replaced by `[redacted]`.
 */
const SECRET_SEGMENTS: readonly RegExp[] = [/^(\/private\/)[^/]+/, /^(\/oauth\/(?:interaction|authorize)\/)[^/]+/];

/**
 * The one redaction of a request path for the logs: every log line that names a path (the access
 * line, outage warnings, error lines) goes through here. The query string is dropped too.
 */
export function redactPath(path: string): string {
  const withoutQuery = path.split('?', 1)[0]!;
  return SECRET_SEGMENTS.reduce((redacted, pattern) => redacted.replace(pattern, '$1[redacted]'), withoutQuery);
}
