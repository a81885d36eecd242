import { DOMParser } from '@xmldom/xmldom';

const METADATA_NS = 'urn:oasis:names:tc:SAML:2.0:metadata';
const SIGNATURE_NS = 'http://www.w3.org/2000/09/xmldsig#';
const REDIRECT_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';

export interface IdentityProviderMetadata {
  entityId: string;
  ssoUrl: string;
  /** PEM, one per signing certificate. */
  certificates: string[];
}

const BASE64 = /^[A-Za-z0-9+/]+=*$/;

function certificatePem(body: string): string {
  return `-----BEGIN CERTIFICATE-----\n${body.match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----\n`;
}

/**
 * What the service provider needs from an identity provider's SAML metadata (what Okta and Entra
 * ID publish): its entity id, its HTTP-Redirect single sign-on URL and its signing certificates; or
 * every piece it lacks at once, so an identity admin fixes the metadata in one go.
 */
export function readIdentityProviderMetadata(xml: string): { metadata: IdentityProviderMetadata } | { problems: string[] } {
  const parseErrors: string[] = [];
  const document = new DOMParser({ errorHandler: { warning: () => undefined, error: (message: string) => parseErrors.push(message), fatalError: (message: string) => parseErrors.push(message) } }).parseFromString(xml, 'text/xml');
  if (parseErrors.length || !document?.documentElement) return { problems: ['the SAML metadata is not well-formed XML'] };
  const descriptor = document.getElementsByTagNameNS(METADATA_NS, 'IDPSSODescriptor')[0];
  if (!descriptor) return { problems: ['the SAML metadata describes no identity provider (no IDPSSODescriptor)'] };
  let entity = descriptor.parentNode as Element | null;
  while (entity && entity.localName !== 'EntityDescriptor') entity = entity.parentNode as Element | null;
  const entityId = entity?.getAttribute('entityID') ?? '';
  const services = Array.from(descriptor.getElementsByTagNameNS(METADATA_NS, 'SingleSignOnService'));
  const ssoUrl = services.find((service) => service.getAttribute('Binding') === REDIRECT_BINDING)?.getAttribute('Location') ?? '';
  const encoded = Array.from(descriptor.getElementsByTagNameNS(METADATA_NS, 'KeyDescriptor'))
    .filter((key) => (key.getAttribute('use') ?? 'signing') === 'signing')
    .flatMap((key) => Array.from(key.getElementsByTagNameNS(SIGNATURE_NS, 'X509Certificate')))
    .map((element) => (element.textContent ?? '').replace(/\s+/g, ''));
  const certificateProblem = encoded.some((body) => !BASE64.test(body))
    ? 'the SAML metadata holds a signing certificate that is not base64'
    : encoded.length ? undefined : 'the SAML metadata has no signing certificate';
  const problems = [
    ...(entityId ? [] : ['the SAML metadata names no entityID']),
    ...(/^https?:\/\//.test(ssoUrl) ? [] : ['the SAML metadata has no HTTP-Redirect SingleSignOnService']),
    ...(certificateProblem ? [certificateProblem] : []),
  ];
  if (problems.length) return { problems };
  return { metadata: { entityId, ssoUrl, certificates: [...new Set(encoded.map(certificatePem))] } };
}
