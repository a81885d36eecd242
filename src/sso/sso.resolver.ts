import { Arg, Ctx, Field, ID, InputType, Mutation, ObjectType, Query, Resolver, registerEnumType } from 'type-graphql';
import { DateTimeResolver } from 'graphql-scalars';
import { requirePrincipal, type Context } from '../graphql/context.js';
import { serviceProviderDetails } from './sso.service-provider.js';
import { SsoService, ssoSecretSealer } from './sso.service.js';
import { MaxLength } from '../graphql/input-bounds.js';
import { rebased, registerInputValidator } from '../graphql/input-validators.js';
import { checkedProvider } from './sso-settings-checks.js';
import { fetchIssuerMetadata } from './sso.discovery.js';
import type { SsoProtocol } from './sso-configuration.entity.js';

export const SsoProtocolEnum = { OIDC: 'oidc', SAML: 'saml' } as const satisfies Record<string, SsoProtocol>;

registerEnumType(SsoProtocolEnum, {
  name: 'SsoProtocol',
  description: 'How the identity provider signs users in.',
  valuesConfig: {
    OIDC: { description: 'OpenID Connect: this service is the relying party (authorization code + PKCE).' },
    SAML: { description: 'SAML 2.0: this service is the service provider (signed assertions, HTTP-POST).' },
  },
});

@ObjectType('SsoIdentityProvider', { description: 'The identity provider the account signs its users in with. Secrets are never shown.' })
export class SsoIdentityProviderObject {
  @Field(() => SsoProtocolEnum, { description: 'OIDC or SAML.' })
  protocol!: SsoProtocol;

  @Field({ description: 'Shown on the sign-in page as "Sign in with <displayName>".' })
  displayName!: string;

  @Field({ description: 'When true, passwords of the account\'s users are refused: single sign-on only.' })
  requireSso!: boolean;

  @Field({ description: 'When true, a user the provider vouches for and this account lacks is created (role user).' })
  jit!: boolean;

  @Field(() => String, { nullable: true, description: 'OIDC: the issuer URL (null for SAML).' })
  oidcIssuer!: string | null;

  @Field(() => String, { nullable: true, description: 'OIDC: this service\'s client id at the provider (null for SAML).' })
  oidcClientId!: string | null;

  @Field({ description: 'Whether an OIDC client secret is stored (sealed; never shown).' })
  oidcClientSecretStored!: boolean;

  @Field(() => String, { nullable: true, description: 'SAML: the identity provider\'s entity id (null for OIDC).' })
  samlIdpEntityId!: string | null;

  @Field(() => String, { nullable: true, description: 'SAML: where users are sent to sign in (null for OIDC).' })
  samlSsoUrl!: string | null;

  @Field(() => DateTimeResolver, { description: 'When the configuration last changed.' })
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

@ObjectType('SingleSignOn', { description: 'The account\'s single sign-on: its identity provider and this service\'s side of it.' })
export class SingleSignOnObject {
  @Field(() => ID, { description: 'The account\'s single sign-on, one per account: the same id before and after every change, so a client cache updates the page a change answers.' })
  id!: string;

  @Field(() => SsoIdentityProviderObject, { nullable: true, description: 'Null when the account has no identity provider.' })
  identityProvider!: SsoIdentityProviderObject | null;

  @Field(() => SsoServiceProviderObject, { description: 'What to register at the identity provider.' })
  serviceProvider!: SsoServiceProviderObject;
}

@InputType({ description: 'An OpenID Connect identity provider.' })
export class OidcIdentityProviderInput {
  @MaxLength(2048)
  @Field({ description: 'The issuer URL: https (http only on loopback outside production). Its discovery document is fetched now; a private, loopback or link-local address is refused in production.' })
  issuer!: string;

  @MaxLength(255)
  @Field({ description: 'This service\'s client id at the provider.' })
  clientId!: string;

  @MaxLength(1024)
  @Field(() => String, { nullable: true, description: 'The client secret: write-only (stored sealed, never shown). Null: a public client (PKCE only).' })
  clientSecret?: string | null;
}

@InputType({ description: 'A SAML 2.0 identity provider.' })
export class SamlIdentityProviderInput {
  @MaxLength(100_000)
  @Field({ description: 'The provider\'s metadata XML (entity id, HTTP-Redirect sign-in URL, signing certificates); a malformed document is BAD_USER_INPUT.' })
  metadataXml!: string;
}

@InputType({ description: 'The account\'s identity provider: exactly one of oidc and saml.' })
export class ConfigureSingleSignOnInput {
  @MaxLength(100)
  @Field(() => String, { nullable: true, description: 'Shown as "Sign in with <name>" (default: the provider\'s host name).' })
  name?: string | null;

  @Field(() => OidcIdentityProviderInput, { nullable: true, description: 'An OpenID Connect provider.' })
  oidc?: OidcIdentityProviderInput | null;

  @Field(() => SamlIdentityProviderInput, { nullable: true, description: 'A SAML 2.0 provider.' })
  saml?: SamlIdentityProviderInput | null;

  @Field({ defaultValue: false, description: 'True: the account\'s users may sign in only through the provider (passwords stop working).' })
  requireSso!: boolean;

  @Field({ defaultValue: false, description: 'True: a user the provider vouches for and the account lacks is created (role user).' })
  jit!: boolean;
}

// The provider's checks also join a refusal of the input's scalars or bounds, so its settings are answered in one go.
registerInputValidator('ConfigureSingleSignOnInput', (value, site) => rebased(site, checkedProvider(value).problems));

@ObjectType({ description: 'The account\'s single sign-on after the change.' })
export class SingleSignOnPayload {
  @Field(() => SingleSignOnObject, { description: 'The configuration as it is now (identityProvider null once disabled).' })
  singleSignOn!: SingleSignOnObject;
}

function ssoService(context: Context): SsoService {
  return new SsoService(context.em, context.transactions, ssoSecretSealer(context.runtime.serverSecret));
}

async function singleSignOnOf(context: Context, accountId: string): Promise<SingleSignOnObject> {
  const identityProvider = await ssoService(context).show(accountId);
  return { id: `sso-${accountId}`, identityProvider, serviceProvider: serviceProviderDetails(context.runtime.urls.api, accountId) };
}

@Resolver()
export class SsoResolver {
  @Query(() => SingleSignOnObject, { nullable: true, description: 'The account\'s single sign-on: its identity provider (no secrets) and this service provider\'s own settings. can_update_user. Nullable: forbidden, it is null with its error and the rest of the page is served.' })
  async singleSignOn(@Ctx() context: Context): Promise<SingleSignOnObject> {
    return singleSignOnOf(context, requirePrincipal(context).accountId);
  }

  @Mutation(() => SingleSignOnPayload, {
    description: 'Configures (or replaces) the account\'s identity provider. An OIDC issuer\'s discovery document is fetched by the server first (SSRF-guarded); '
      + 'a SAML metadata document is parsed. account_admin; a token needs credentials.write. Audited. '
      + 'Unless the owner (or the operator) saved it, it signs in no owner and no admin other than the one who saved it (docs/security.md).',
  })
  async configureSingleSignOn(@Arg('input', () => ConfigureSingleSignOnInput, { description: 'The identity provider to use: exactly one of oidc or saml.' }) input: ConfigureSingleSignOnInput, @Ctx() context: Context): Promise<SingleSignOnPayload> {
    const { accountId } = requirePrincipal(context);
    await ssoService(context).configure({
      accountId,
      displayName: input.name ?? undefined,
      oidc: input.oidc ? { issuer: input.oidc.issuer, clientId: input.oidc.clientId, clientSecret: input.oidc.clientSecret ?? '' } : undefined,
      samlMetadataXml: input.saml ? input.saml.metadataXml : undefined,
      requireSso: input.requireSso,
      jit: input.jit,
      savedBy: requirePrincipal(context),
    }, { verifyIssuer: (issuer) => fetchIssuerMetadata(issuer, { production: context.runtime.production }) });
    return { singleSignOn: await singleSignOnOf(context, accountId) };
  }

  @Mutation(() => SingleSignOnPayload, {
    description: 'Removes the account\'s identity provider: its users sign in with passwords again. account_admin; a token needs credentials.write. Audited.',
  })
  async disableSingleSignOn(@Ctx() context: Context): Promise<SingleSignOnPayload> {
    const { accountId } = requirePrincipal(context);
    await ssoService(context).disable(accountId);
    return { singleSignOn: await singleSignOnOf(context, accountId) };
  }
}
