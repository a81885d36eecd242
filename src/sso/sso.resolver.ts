import { Authorized, Ctx, Field, ObjectType, Query, Resolver } from 'type-graphql';
import { DateTimeResolver } from 'graphql-scalars';
import type { Requirement } from '../auth/auth-checker.js';
import { requirePrincipal, type Context } from '../graphql/context.js';
import { serviceProviderDetails } from './sso.service-provider.js';
import { SsoService, ssoSecretSealer } from './sso.service.js';

@ObjectType('SsoIdentityProvider', { description: 'The identity provider the account signs its users in with. Secrets are never shown.' })
export class SsoIdentityProviderObject {
  @Field({ description: 'oidc or saml.' })
  protocol!: string;

  @Field({ description: 'Shown on the sign-in page as "Sign in with <displayName>".' })
  displayName!: string;

  @Field({ description: 'When true, passwords of the account\'s users are refused: single sign-on only.' })
  requireSso!: boolean;

  @Field({ description: 'When true, a user the provider vouches for and this account lacks is created (role user).' })
  jit!: boolean;

  @Field(() => String, { description: 'OIDC: the identity provider\'s issuer URL.', nullable: true })
  oidcIssuer!: string | null;

  @Field(() => String, { description: 'OIDC: this service\'s client id at the identity provider.', nullable: true })
  oidcClientId!: string | null;

  @Field({ description: 'Whether an OIDC client secret is stored (sealed; never shown).' })
  oidcClientSecretStored!: boolean;

  @Field(() => String, { description: 'SAML: the identity provider\'s entity id.', nullable: true })
  samlIdpEntityId!: string | null;

  @Field(() => String, { description: 'SAML: the identity provider\'s single sign-on URL.', nullable: true })
  samlSsoUrl!: string | null;

  @Field(() => DateTimeResolver, { description: 'When the configuration was last changed.' })
  updatedAt!: Date;
}

@ObjectType('SsoServiceProvider', { description: 'This service as the identity provider must know it: paste these into Okta, Entra ID, ...' })
export class SsoServiceProviderObject {
  @Field({ description: 'OIDC: the sign-in redirect URI to register.' })
  oidcRedirectUri!: string;

  @Field({ description: 'SAML: the audience (SP entity id).' })
  samlEntityId!: string;

  @Field({ description: 'SAML: the assertion consumer service URL (HTTP-POST).' })
  samlAssertionConsumerUrl!: string;

  @Field({ description: 'SAML: where the SP metadata XML is served (stable, public).' })
  samlMetadataUrl!: string;

  @Field({ description: 'SAML: the SP metadata XML itself.' })
  samlMetadataXml!: string;
}

@ObjectType('SingleSignOn', { description: 'The account\'s single sign-on: its identity provider and this service provider\'s own settings.' })
export class SingleSignOnObject {
  @Field(() => SsoIdentityProviderObject, { nullable: true, description: 'Null when the account has no identity provider.' })
  identityProvider!: SsoIdentityProviderObject | null;

  @Field(() => SsoServiceProviderObject, { description: 'This service\'s settings, to enter at the identity provider.' })
  serviceProvider!: SsoServiceProviderObject;
}

@Resolver()
export class SsoResolver {
  @Authorized<Requirement>('can_update_user')
  @Query(() => SingleSignOnObject, { description: 'The account\'s single sign-on: its identity provider (no secrets) and this service provider\'s own settings. can_update_user.' })
  async singleSignOn(@Ctx() context: Context): Promise<SingleSignOnObject> {
    const { accountId } = requirePrincipal(context);
    const identityProvider = await new SsoService(context.em, context.transactions, ssoSecretSealer(context.runtime.serverSecret)).show(accountId);
    return { identityProvider, serviceProvider: serviceProviderDetails(context.runtime.urls.api, accountId) };
  }
}
