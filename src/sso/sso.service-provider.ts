import { generateServiceProviderMetadata } from '@node-saml/node-saml';
import { oidcRedirectUri, samlAssertionConsumerUrl, samlEntityId } from './sso.endpoints.js';

export interface ServiceProviderDetails {
  oidcRedirectUri: string;
  samlEntityId: string;
  samlAssertionConsumerUrl: string;
  samlMetadataUrl: string;
  samlMetadataXml: string;
}

/** This service as the identity provider sees it: what an administrator registers there. */
export function serviceProviderDetails(apiUrl: string, accountId: string): ServiceProviderDetails {
  const entityId = samlEntityId(apiUrl, accountId);
  return {
    oidcRedirectUri: oidcRedirectUri(apiUrl),
    samlEntityId: entityId,
    samlAssertionConsumerUrl: samlAssertionConsumerUrl(apiUrl),
    samlMetadataUrl: entityId,
    samlMetadataXml: generateServiceProviderMetadata({
      issuer: entityId,
      callbackUrl: samlAssertionConsumerUrl(apiUrl),
      identifierFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
      wantAssertionsSigned: true,
      // The same document at every fetch: an IdP that polls the metadata URL sees no change.
      generateUniqueId: () => `_sp-${accountId}`,
    }),
  };
}
