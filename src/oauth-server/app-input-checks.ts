import { isIP } from 'node:net';
import { scopesOf, type Principal } from '../auth/principal.js';
import { CREDENTIAL_SCOPES, isScope } from '../auth/scopes.js';
import { InvalidInputError, type FieldProblem } from '../errors/domain-errors.js';
import { isForbiddenAddress } from '../http/outbound-fetch.js';
import { ISSUABLE_SCOPES, parseScopes } from '../oauth-delegations/oauth-delegation.service.js';
import { isAppKind, type AppKind } from './oauth-app.entity.js';

/**
 * The checks of an app's registration and changes, each answering its clean value and every
 * problem it found at the field's path (`["input", "redirectUris", 2]`), so one answer names every
 * bad field of a registration.
 */
export const APP_NAME_MAX = 100;
const MAX_REDIRECT_URIS = 10;

/**
 * Kinds that may hold `credentials.*`: the product's own web, mobile and browser apps (their tokens
 * manage credentials only with a recent sign-in, and a browser app's last ten minutes) and the
 * account's integrations.
 */
const CREDENTIAL_SCOPE_KINDS: ReadonlySet<AppKind> = new Set(['web', 'mobile', 'spa', 'integration']);

export interface Checked<T> {
  value: T;
  problems: FieldProblem[];
}

/** A field the change leaves as it is. */
export const unchanged: Checked<undefined> = { value: undefined, problems: [] };

const at = (field: string, ...rest: number[]) => ['input', field, ...rest];

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
/** Schemes that run or read something where they land instead of delivering a code to an app. */
const DANGEROUS_SCHEMES = new Set(['javascript:', 'data:', 'vbscript:', 'file:', 'blob:', 'about:', 'filesystem:', 'view-source:', 'ws:', 'wss:', 'ftp:']);

/** A host that is this machine or a private network: never where a production app's users are sent. */
function isPrivateHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  return LOOPBACK_HOSTS.has(hostname) || host.endsWith('.localhost') || (isIP(host) !== 0 && isForbiddenAddress(host));
}

/**
 * Where each kind may send its users back: `web`, `spa` and `third_party` to https (http only on
 * loopback, and not in production); `mobile` to a private-use scheme, https, or a loopback http
 * address (any port, RFC 8252; not in production). No kind to a scheme that runs something where
 * it lands, and in production none to a loopback or private-network host. Compared as exact
 * strings; never a fragment or a wildcard.
 */
function redirectUriProblem(raw: string, kind: AppKind, production: boolean): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return `redirect-uri "${raw}" is not an absolute URI`;
  }
  if (url.hash || raw.includes('#')) return `redirect-uri "${raw}" must not have a fragment`;
  if (raw.includes('*')) return `redirect-uri "${raw}" must be exact (no wildcard)`;
  if (DANGEROUS_SCHEMES.has(url.protocol)) return `redirect-uri "${raw}" uses a scheme no app may use`;
  if (production && (url.protocol === 'http:' || url.protocol === 'https:') && isPrivateHost(url.hostname)) {
    return `redirect-uri "${raw}" names a loopback or private-network host, which production apps may not use`;
  }
  const loopback = LOOPBACK_HOSTS.has(url.hostname);
  if (kind === 'mobile') {
    if (url.protocol === 'http:' && !loopback) return `redirect-uri "${raw}": a mobile app uses a private-use scheme, https, or a loopback http address`;
    return undefined;
  }
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && loopback) return undefined;
  if (url.protocol !== 'http:') return `redirect-uri "${raw}": only a mobile app may use a custom scheme`;
  return `redirect-uri "${raw}" must use https (http only for localhost)`;
}

export function checkedName(raw: string): Checked<string> {
  const name = raw.trim();
  const problems = name === '' || name.length > APP_NAME_MAX ? [{ path: at('name'), code: 'INVALID', message: `name must be 1 to ${APP_NAME_MAX} characters` }] : [];
  return { value: name, problems };
}

/** Every problem of a kind's redirect URIs at once; the clean, de-duplicated list. */
export function checkedRedirectUris(kind: AppKind, raw: readonly string[], production: boolean): Checked<string[]> {
  const trimmed = raw.map((uri) => uri.trim());
  const problems: FieldProblem[] = [];
  trimmed.forEach((uri, index) => {
    const problem = redirectUriProblem(uri, kind, production);
    if (problem) problems.push({ path: at('redirectUris', index), code: 'INVALID', message: problem });
  });
  const redirectUris = [...new Set(trimmed)];
  const list = (code: string, message: string) => problems.push({ path: at('redirectUris'), code, message });
  if (kind === 'integration' && redirectUris.length) list('NOT_ALLOWED', 'an integration app uses client credentials and takes no redirect-uri');
  if (kind !== 'integration' && redirectUris.length === 0) list('REQUIRED', 'at least one --redirect-uri is required for a sign-in app');
  if (redirectUris.length > MAX_REDIRECT_URIS) list('INVALID', `at most ${MAX_REDIRECT_URIS} redirect URIs`);
  return { value: redirectUris, problems };
}

/** The scopes this kind may hold and the caller may give; the default leaves out `credentials.*`, which must be asked for. */
export function checkedScopes(kind: AppKind, raw: string | undefined, principal: Principal | undefined): Checked<string[]> {
  const scopes = parseScopes(raw ?? ISSUABLE_SCOPES.filter((scope) => !CREDENTIAL_SCOPES.has(scope) && (kind !== 'integration' || isScope(scope))).join(' '));
  const problems: FieldProblem[] = [];
  const problem = (message: string) => problems.push({ path: at('scopes'), code: 'NOT_ALLOWED', message });
  if (kind === 'integration' && scopes.some((scope) => scope === 'openid' || scope === 'profile')) {
    problem('an integration app acts for the account, not a user: openid and profile do not apply');
  }
  if (!CREDENTIAL_SCOPE_KINDS.has(kind) && scopes.some((scope) => CREDENTIAL_SCOPES.has(scope))) {
    problem(`a ${kind} app may not hold ${[...CREDENTIAL_SCOPES].join(' or ')}: only first-party web and mobile apps and integrations may`);
  }
  const held = principal ? scopesOf(principal) : undefined;
  const beyond = held ? scopes.filter((scope) => isScope(scope) && !held.has(scope)) : [];
  if (beyond.length) problem(`scope ${beyond.join(' ')} is more than this token holds`);
  return { value: scopes, problems };
}

type Values<T extends readonly Checked<unknown>[]> = { [K in keyof T]: T[K] extends Checked<infer V> ? V : never };

/** The checked values, or one error naming every problem of every field. */
export function valuesOrProblems<T extends readonly Checked<unknown>[]>(...checks: T): Values<T> {
  const problems = checks.flatMap((check) => check.problems);
  if (problems.length) throw InvalidInputError.ofFields(problems);
  return checks.map((check) => check.value) as Values<T>;
}

const isStringList = (value: unknown): value is string[] => Array.isArray(value) && value.every((item) => typeof item === 'string');

/**
 * A registration's own problems as far as its input coerced, for the answer that also names its
 * bounds and scalars: the name and, once the kind is known, the redirect URIs and scopes. What the
 * caller's token holds is weighed when the service runs.
 */
export function registrationProblems(input: Record<string, unknown>, production: boolean): FieldProblem[] {
  const problems = typeof input.name === 'string' ? checkedName(input.name).problems : [];
  if (!isAppKind(input.kind)) return problems;
  if (isStringList(input.redirectUris)) problems.push(...checkedRedirectUris(input.kind, input.redirectUris, production).problems);
  if (isStringList(input.scopes)) problems.push(...checkedScopes(input.kind, input.scopes.join(' '), undefined).problems);
  return problems;
}

/** A change's own problems before its app (and so its kind) is read: the name. */
export function changeProblems(input: Record<string, unknown>): FieldProblem[] {
  return typeof input.name === 'string' ? checkedName(input.name).problems : [];
}
