import { DOMParser } from '@xmldom/xmldom';
import { InvalidInputError } from '../errors/domain-errors.js';

const METADATA_NS = 'urn:oasis:names:tc:SAML:2.0:metadata';
const SIGNATURE_NS = 'http://www.w3.org/2000/09/xmldsig#';
const REDIRECT_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';

export interface IdentityProviderMetadata {
  entityId: string;
  ssoUrl: string;
  /** PEM, one per signing certificate. */
  certificates: string[];
}

function certificatePem(base64: string): string {
  const body = base64.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]+=*$/.test(body)) throw new InvalidInputError('the metadata holds a certificate that is not base64');
  return `-----BEGIN CERTIFICATE-----\n${body.match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----\n`;
}

/**
 * What the service provider needs from an identity provider's SAML metadata (what Okta and Entra
 * ID publish): its entity id, its HTTP-Redirect single sign-on URL and its signing certificates.
 */
export function parseIdentityProviderMetadata(xml: string): IdentityProviderMetadata {
  const parseErrors: string[] = [];
  const document = new DOMParser({ errorHandler: { warning: () => undefined, error: (message: string) => parseErrors.push(message), fatalError: (message: string) => parseErrors.push(message) } }).parseFromString(xml, 'text/xml');
  if (parseErrors.length || !document?.documentElement) throw metadataProblems(['the SAML metadata is not well-formed XML']);
  const descriptor = document.getElementsByTagNameNS(METADATA_NS, 'IDPSSODescriptor')[0];
  if (!descriptor) throw metadataProblems(['the SAML metadata describes no identity provider (no IDPSSODescriptor)']);
  let entity = descriptor.parentNode as Element | null;
  while (entity && entity.localName !== 'EntityDescriptor') entity = entity.parentNode as Element | null;
  const entityId = entity?.getAttribute('entityID') ?? '';
  const services = Array.from(descriptor.getElementsByTagNameNS(METADATA_NS, 'SingleSignOnService'));
  const ssoUrl = services.find((service) => service.getAttribute('Binding') === REDIRECT_BINDING)?.getAttribute('Location') ?? '';
  const certificates = Array.from(descriptor.getElementsByTagNameNS(METADATA_NS, 'KeyDescriptor'))
    .filter((key) => (key.getAttribute('use') ?? 'signing') === 'signing')
    .flatMap((key) => Array.from(key.getElementsByTagNameNS(SIGNATURE_NS, 'X509Certificate')))
    .map((element) => certificatePem(element.textContent ?? ''));
  // Every missing piece at once, so an identity admin fixes the metadata in one go.
  const problems = [
    ...(entityId ? [] : ['the SAML metadata names no entityID']),
    ...(/^https?:\/\//.test(ssoUrl) ? [] : ['the SAML metadata has no HTTP-Redirect SingleSignOnService']),
    ...(certificates.length ? [] : ['the SAML metadata has no signing certificate']),
  ];
  if (problems.length) throw metadataProblems(problems);
  return { entityId, ssoUrl, certificates: [...new Set(certificates)] };
}

/** The metadata's problems, each at the input field that carried it. */
function metadataProblems(problems: string[]): InvalidInputError {
  return InvalidInputError.ofFields(problems.map((message) => ({ path: ['input', 'saml', 'metadataXml'], code: 'INVALID', message })));
}
