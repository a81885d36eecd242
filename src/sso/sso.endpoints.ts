/** The service provider's own URLs, the ones an administrator pastes into the identity provider. */
export const SSO_PATHS = {
  oidcCallback: '/sso/oidc/callback',
  samlAssertionConsumer: '/sso/saml/acs',
  /** Where the browser comes for a SAML answer the identity provider posted (cross-site, so without our cookie). */
  samlContinue: '/sso/saml/continue',
  samlMetadata: '/sso/saml/:accountId/metadata',
} as const;

function base(apiUrl: string): string {
  return apiUrl.replace(/\/+$/, '');
}

export function oidcRedirectUri(apiUrl: string): string {
  return `${base(apiUrl)}${SSO_PATHS.oidcCallback}`;
}

export function samlAssertionConsumerUrl(apiUrl: string): string {
  return `${base(apiUrl)}${SSO_PATHS.samlAssertionConsumer}`;
}

/** Each account is its own SAML service provider (audience): its entity id is its metadata URL. */
export function samlEntityId(apiUrl: string, accountId: string): string {
  return `${base(apiUrl)}${SSO_PATHS.samlMetadata.replace(':accountId', encodeURIComponent(accountId))}`;
}
