import { InvalidInputError } from '../errors/domain-errors.js';
import { checkedDestination, guardedFetch, OutboundRefusal, type OutboundOptions } from '../http/outbound-fetch.js';

export { isForbiddenAddress, type ResolveHost } from '../http/outbound-fetch.js';

export type DiscoveryFetchOptions = OutboundOptions;

/** What this service needs of an issuer's discovery document to sign users in with it. */
export interface IssuerMetadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
}

/** The endpoints of a discovery document that the server itself calls (the authorization endpoint is the browser's). */
const CALLED_ENDPOINTS = ['token_endpoint', 'jwks_uri', 'userinfo_endpoint'] as const;

function refused(issuer: string, why: string): InvalidInputError {
  return new InvalidInputError(`the OIDC issuer ${issuer} cannot be used: ${why}`);
}

/**
 * Fetches `<issuer>/.well-known/openid-configuration` through the outbound guard
 * (`src/http/outbound-fetch.ts`), and checks that every endpoint the server will call from it
 * passes the same guard now: a document cannot send the client's secret to an address the issuer
 * itself could not be. Anything wrong is the administrator's input: BAD_USER_INPUT.
 */
export async function fetchIssuerMetadata(issuer: string, options: DiscoveryFetchOptions): Promise<IssuerMetadata> {
  let url: string;
  try {
    url = new URL(`${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`).href;
  } catch {
    throw refused(issuer, 'not an absolute URL');
  }
  const response = await guardedFetch(url, { headers: { accept: 'application/json' } }, options).catch((error: unknown) => {
    if (error instanceof OutboundRefusal && error.destination) throw refused(issuer, error.message);
    throw refused(issuer, `its discovery document could not be fetched (${error instanceof Error ? error.message : 'error'})`);
  });
  if (response.status !== 200) throw refused(issuer, `its discovery document could not be fetched (HTTP ${response.status})`);
  let document: Partial<Record<keyof IssuerMetadata | 'userinfo_endpoint', unknown>>;
  try {
    document = JSON.parse(await response.text()) as typeof document;
  } catch {
    throw refused(issuer, 'its discovery document is not JSON');
  }
  const missing = (['issuer', 'authorization_endpoint', 'token_endpoint', 'jwks_uri'] as const).filter((name) => typeof document[name] !== 'string');
  if (missing.length) throw refused(issuer, `its discovery document lacks ${missing.join(', ')}`);
  // OpenID Connect Discovery 1.0, section 4.3: the document must name the issuer it was fetched for.
  if ((document.issuer as string).replace(/\/+$/, '') !== issuer.replace(/\/+$/, '')) {
    throw refused(issuer, `its discovery document names another issuer (${String(document.issuer)})`);
  }
  for (const name of CALLED_ENDPOINTS) {
    const endpoint = document[name];
    if (endpoint === undefined) continue;
    await checkedDestination(String(endpoint), options).catch((error: unknown) => {
      throw refused(issuer, `its ${name} ${String(endpoint)} cannot be called: ${error instanceof Error ? error.message : 'refused'}`);
    });
  }
  return document as IssuerMetadata;
}
