import { SAML, ValidateInResponseTo, type CacheProvider } from '@node-saml/node-saml';
import { samlAssertionConsumerUrl, samlEntityId } from './sso.endpoints.js';
import type { AssertedIdentity } from './sso.matching.js';
import { REFUSED, Refusal, assertedEmail } from './sso.refusals.js';
import { ROUND_TRIP_SECONDS } from './sso.round-trips.js';
import type { SsoSettings } from './sso.service.js';

type SamlSettings = NonNullable<SsoSettings['saml']>;

/** One round trip's SAML request: where to send the browser, and the request's id its answer must be InResponseTo. */
export interface SamlAuthorizationRequest {
  url: string;
  requestId: string;
}

const EMAIL_NAME_ID = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';
const PERSISTENT_NAME_ID = 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent';
/** The email attribute as Entra ID and AD FS name it (others send `email` or `mail`). */
const EMAIL_CLAIM = 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress';

/**
 * The SAML service provider of the sign-in: one entity per account, signed assertions required,
 * every answer InResponseTo the request its round trip sent (the library's request cache is only
 * used to capture that id and to check it; the round trip keeps it).
 */
export class SamlClient {
  constructor(private readonly apiUrl: string) {}

  private samlFor(accountId: string, settings: SamlSettings, cacheProvider: CacheProvider): SAML {
    const entityId = samlEntityId(this.apiUrl, accountId);
    return new SAML({
      entryPoint: settings.ssoUrl,
      issuer: entityId,
      audience: entityId,
      callbackUrl: samlAssertionConsumerUrl(this.apiUrl),
      idpCert: settings.certificates,
      idpIssuer: settings.idpEntityId,
      wantAssertionsSigned: true,
      wantAuthnResponseSigned: false,
      validateInResponseTo: ValidateInResponseTo.always,
      requestIdExpirationPeriodMs: ROUND_TRIP_SECONDS * 1000,
      acceptedClockSkewMs: 60_000,
      identifierFormat: EMAIL_NAME_ID,
      disableRequestedAuthnContext: true,
      cacheProvider,
    });
  }

  /** The identity provider's URL for a round trip whose RelayState is `state`, and the id of the request it carries. */
  async authorizationRequest(accountId: string, settings: SamlSettings, state: string): Promise<SamlAuthorizationRequest> {
    let requestId: string | null = null;
    const capture: CacheProvider = {
      saveAsync: async (key, value) => { requestId = key; return { value, createdAt: Date.now() }; },
      getAsync: async () => null,
      removeAsync: async () => null,
    };
    const url = await this.samlFor(accountId, settings, capture).getAuthorizeUrlAsync(state, undefined, {});
    if (!requestId) throw new Error('the SAML request got no id');
    return { url, requestId };
  }

  /** Verifies the posted answer to request `requestId` and returns who its assertion says signed in. */
  async identityFromAnswer(accountId: string, settings: SamlSettings, requestId: string, samlResponse: string): Promise<AssertedIdentity> {
    // InResponseTo must be the request this round trip sent, and nothing else. The library
    // reads the value as the request's instant; the round trip's own expiry already bounds it.
    const expected: CacheProvider = {
      saveAsync: async () => null,
      getAsync: async (key) => (key === requestId ? new Date().toISOString() : null),
      removeAsync: async () => null,
    };
    const { profile } = await this.samlFor(accountId, settings, expected).validatePostResponseAsync({ SAMLResponse: samlResponse });
    // The library checks the issuer of logout messages only: the assertion's is checked here.
    if (!profile || profile.issuer !== settings.idpEntityId) throw new Refusal(REFUSED, 401, 'the assertion is from another issuer');
    const name = typeof profile.displayName === 'string' ? profile.displayName : undefined;
    if (profile.nameIDFormat === EMAIL_NAME_ID) return { issuer: profile.issuer, subject: profile.nameID, email: assertedEmail(profile.nameID), name };
    if (profile.nameIDFormat === PERSISTENT_NAME_ID && profile.nameID) {
      const attribute = profile.email ?? profile.mail ?? profile[EMAIL_CLAIM];
      return { issuer: profile.issuer, subject: profile.nameID, email: attribute === undefined ? undefined : assertedEmail(attribute), name };
    }
    throw new Refusal(REFUSED, 401, 'the assertion names neither a persistent subject nor an email');
  }
}
