import { InvalidInputError, type FieldProblem } from '../errors/domain-errors.js';
import { readIdentityProviderMetadata, type IdentityProviderMetadata } from './saml-metadata.js';

/**
 * The checks of an identity provider's settings, pure: every problem at its field (the argument's
 * names: `["input", "oidc", "issuer"]`), for the service and for the answer that also names the
 * input's bounds and scalars. Parts of an input that did not coerce are undefined and not checked.
 */
export interface ProviderSettingsInput {
  oidc?: { issuer?: unknown; clientId?: unknown; clientSecret?: unknown } | null;
  saml?: { metadataXml?: unknown } | null;
}

export interface CheckedProvider {
  oidc?: { issuer: string; clientId: string; secret: string | undefined };
  saml?: IdentityProviderMetadata;
}

const OIDC_CLIENT_ID_MAX = 255;

/** An http(s) URL without its trailing slash, or why it is not one. */
function httpUrl(value: string, what: string): { url: string } | { problem: string } {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { problem: `${what} must be an absolute URL` };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { problem: `${what} must be an http(s) URL` };
  return { url: url.href.replace(/\/$/, '') };
}

function checkedOidc(oidc: NonNullable<ProviderSettingsInput['oidc']>, problems: FieldProblem[]): CheckedProvider['oidc'] {
  const issuer = typeof oidc.issuer === 'string' ? httpUrl(oidc.issuer.trim(), 'the OIDC issuer') : undefined;
  const clientId = typeof oidc.clientId === 'string' ? oidc.clientId.trim() : undefined;
  if (issuer && 'problem' in issuer) problems.push({ path: ['input', 'oidc', 'issuer'], code: 'INVALID', message: issuer.problem });
  if (clientId !== undefined && (!clientId || clientId.length > OIDC_CLIENT_ID_MAX)) {
    problems.push({ path: ['input', 'oidc', 'clientId'], code: 'INVALID', message: `the OIDC client id must be 1 to ${OIDC_CLIENT_ID_MAX} characters` });
  }
  if (!issuer || !('url' in issuer) || !clientId) return undefined;
  return { issuer: issuer.url, clientId, secret: typeof oidc.clientSecret === 'string' ? oidc.clientSecret : undefined };
}

function checkedSaml(saml: NonNullable<ProviderSettingsInput['saml']>, problems: FieldProblem[]): IdentityProviderMetadata | undefined {
  if (typeof saml.metadataXml !== 'string') return undefined;
  const read = readIdentityProviderMetadata(saml.metadataXml);
  if ('metadata' in read) return read.metadata;
  problems.push(...read.problems.map((message) => ({ path: ['input', 'saml', 'metadataXml'], code: 'INVALID', message })));
  return undefined;
}

/** Exactly one provider, OIDC or SAML, each piece of it checked: its clean settings and every problem found. */
export function checkedProvider(input: ProviderSettingsInput): { value: CheckedProvider; problems: FieldProblem[] } {
  const problems: FieldProblem[] = [];
  const [hasOidc, hasSaml] = [input.oidc != null, input.saml != null];
  if (hasOidc === hasSaml) {
    const [code, message] = hasOidc ? ['INVALID', 'configure exactly one provider: oidc or saml, not both'] : ['REQUIRED', 'configure exactly one provider: oidc (issuer, client id, secret) or saml (metadata)'];
    problems.push({ path: ['input', 'oidc'], code, message }, { path: ['input', 'saml'], code, message });
  }
  const oidc = input.oidc ? checkedOidc(input.oidc, problems) : undefined;
  const saml = input.saml ? checkedSaml(input.saml, problems) : undefined;
  return { value: { oidc, saml }, problems };
}

/** The provider's clean settings, or one error naming every problem of them. */
export function providerSettings(input: ProviderSettingsInput): CheckedProvider {
  const { value, problems } = checkedProvider(input);
  if (problems.length) throw InvalidInputError.ofFields(problems);
  return value;
}
