import { Arg, Ctx, Field, FieldResolver, ID, InputType, Int, Mutation, ObjectType, Query, Resolver, Root, registerEnumType } from 'type-graphql';
import { DateTimeResolver } from 'graphql-scalars';
import { isUserPrincipal } from '../auth/principal.js';
import { InvalidInputError } from '../errors/domain-errors.js';
import { requirePrincipal, type Context } from '../graphql/context.js';
import { APP_NAME_MAX, AppsService, PREVIOUS_SECRET_DEFAULT_SECONDS, PREVIOUS_SECRET_MAX_SECONDS } from './apps.service.js';
import { OAuthDelegationObject } from '../oauth-delegations/oauth-delegation.type.js';
import { OAuthDelegationsService } from '../oauth-delegations/oauth-delegation.service.js';
import type { OAuthDelegation } from '../oauth-delegations/oauth-delegation.entity.js';
import type { AppKind, OAuthApp } from './oauth-app.entity.js';
import { changeOwnPassword, PASSWORD_MAX_LENGTH } from './passwords.js';
import { MaxLength } from '../graphql/input-bounds.js';
import { rebased, registerInputValidator } from '../graphql/input-validators.js';
import { changeProblems, registrationProblems } from './app-input-checks.js';
import { sealersFor } from './provider.js';

export const OAuthAppKindEnum = {
  MOBILE: 'mobile',
  WEB: 'web',
  INTEGRATION: 'integration',
  THIRD_PARTY: 'third_party',
  SPA: 'spa',
} as const satisfies Record<string, AppKind>;

registerEnumType(OAuthAppKindEnum, {
  name: 'OAuthAppKind',
  description: 'MOBILE: public client (PKCE, no secret). WEB: first-party confidential client. THIRD_PARTY: confidential, users consent. INTEGRATION: acts for the account (client credentials). '
    + 'SPA: a browser app, public (PKCE, no secret, exact redirect URIs), its sign-ins WEB delegations that end 24 hours after sign-in.',
  valuesConfig: {
    MOBILE: { description: 'The product\'s mobile app: a public client (authorization code + PKCE, no secret); private-use scheme, https or loopback redirect URIs.' },
    WEB: { description: 'The product\'s server-side web app: a confidential client (secret) that signs users in without a consent page.' },
    INTEGRATION: { description: 'Acts for the whole account with client credentials (secret); no user, no redirect URI; its rights are its scopes.' },
    THIRD_PARTY: { description: 'Another company\'s app: confidential (secret); users see a consent page; never holds credentials.* scopes.' },
    SPA: { description: 'A browser app: public (PKCE, no secret), exact https redirect URIs; refresh tokens rotate on every use and end 24 hours after sign-in; its sign-ins are WEB delegations.' },
  },
});

@ObjectType('OAuthApp', { description: 'An app registered with the authorization server (an OAuth client of the account). Its secret is never shown again.' })
export class OAuthAppObject implements Partial<Record<keyof OAuthApp, unknown>> {
  @Field(() => ID, { description: 'The app\'s OAuth client id (public, stable).' })
  clientId!: string;

  @Field({ description: 'Shown to users on the sign-in and consent pages.' })
  name!: string;

  @Field(() => OAuthAppKindEnum, { description: 'What kind of client it is; fixed at registration.' })
  kind!: AppKind;

  @Field(() => [String], { description: 'Where the authorization server may send users back, compared as exact strings (empty for an integration).' })
  redirectUris!: string[];

  @Field({ description: 'The scopes the app may ask for, space-separated.' })
  scope!: string;

  @Field(() => DateTimeResolver, { description: 'When the app was registered.' })
  createdAt!: Date;
}

const SCOPES_DESCRIPTION = 'OAuth scopes the app may ask for. credentials.read and credentials.write only for WEB, MOBILE and INTEGRATION apps; '
  + 'openid and profile not for an INTEGRATION; a token cannot give an app a scope it does not hold itself.';

@InputType({ description: 'A new app of the caller\'s account.' })
export class RegisterOAuthAppInput {
  @MaxLength(APP_NAME_MAX)
  @Field({ description: `Shown to users; 1 to ${APP_NAME_MAX} characters.` })
  name!: string;

  @Field(() => OAuthAppKindEnum, { description: 'What kind of client it is.' })
  kind!: AppKind;

  @MaxLength(2000)
  @Field(() => [String], { defaultValue: [], description: 'Exact redirect URIs (1 to 10; none for an INTEGRATION): https (http only on loopback, not in production); a private-use scheme only for MOBILE.' })
  redirectUris!: string[];

  @MaxLength(100)
  @Field(() => [String], { description: SCOPES_DESCRIPTION })
  scopes!: string[];
}

@ObjectType({ description: 'The registered app and, for a confidential one, its secret.' })
export class RegisterOAuthAppPayload {
  @Field(() => OAuthAppObject, { description: 'The new app.' })
  app!: OAuthApp;

  @Field(() => String, { nullable: true, description: 'The client secret (WEB, THIRD_PARTY, INTEGRATION): shown only now, never again. Null for public clients (MOBILE, SPA).' })
  clientSecret!: string | null;
}

@InputType({ description: 'Which app gets a new secret, and how long the one it replaces keeps working.' })
export class RotateOAuthAppSecretInput {
  @MaxLength(64)
  @Field(() => ID, { description: 'The app\'s client id.' })
  clientId!: string;

  @Field(() => Int, { defaultValue: PREVIOUS_SECRET_DEFAULT_SECONDS, description: `Seconds the previous secret keeps working, 0 to ${PREVIOUS_SECRET_MAX_SECONDS} (default ${PREVIOUS_SECRET_DEFAULT_SECONDS}). A secret rotated out earlier stops now.` })
  previousExpiresIn!: number;
}

@ObjectType({ description: 'The app and its new secret.' })
export class RotateOAuthAppSecretPayload {
  @Field(() => OAuthAppObject, { description: 'The app.' })
  app!: OAuthApp;

  @Field({ description: 'The new client secret: shown only now, never again.' })
  clientSecret!: string;
}

@InputType({ description: 'What to change of an app; omitted fields stay as they are.' })
export class UpdateOAuthAppInput {
  @MaxLength(64)
  @Field(() => ID, { description: 'The app\'s client id.' })
  clientId!: string;

  @MaxLength(APP_NAME_MAX)
  @Field(() => String, { nullable: true, description: 'A new name.' })
  name?: string | null;

  @MaxLength(2000)
  @Field(() => [String], { nullable: true, description: 'The new redirect URIs (replacing all), under the same rules as registerOAuthApp.' })
  redirectUris?: string[] | null;

  @MaxLength(100)
  @Field(() => [String], { nullable: true, description: `The new scopes (replacing all). ${SCOPES_DESCRIPTION}` })
  scopes?: string[] | null;

  @Field(() => Boolean, { nullable: true, description: 'True: the app\'s tokens are refused and its sign-ins and client authentications fail, at once, until it is enabled again (false).' })
  disabled?: boolean | null;
}

// The app rules also join a refusal of the input's scalars or bounds, so a registration hears of every bad field at once.
registerInputValidator('RegisterOAuthAppInput', (value, site) => rebased(site, registrationProblems(value, site.production)));
registerInputValidator('UpdateOAuthAppInput', (value, site) => rebased(site, changeProblems(value)));

@ObjectType({ description: 'The changed app.' })
export class UpdateOAuthAppPayload {
  @Field(() => OAuthAppObject, { description: 'The app as it is now.' })
  app!: OAuthApp;
}

@InputType({ description: 'The app to delete.' })
export class DeleteOAuthAppInput {
  @MaxLength(64)
  @Field(() => ID, { description: 'The app\'s client id.' })
  clientId!: string;
}

@ObjectType({ description: 'The deleted app, as it was, and what its deletion revoked.' })
export class DeleteOAuthAppPayload {
  @Field(() => OAuthAppObject, { description: 'The app as it was before its deletion (it no longer exists).' })
  app!: OAuthApp;

  @Field(() => Int, { description: 'How many delegations (sign-ins, grants, the integration\'s account-wide one) the deletion revoked.' })
  revokedDelegationCount!: number;
}

function appsService(context: Context): AppsService {
  return new AppsService(context.em, sealersFor(context.runtime.serverSecret).clientSecrets, context.transactions, { production: context.runtime.production });
}

@InputType({ description: 'The current password proves it is the user; the new one replaces it.' })
export class ChangeMyPasswordInput {
  @MaxLength(PASSWORD_MAX_LENGTH)
  @Field({ description: 'The password in use now (BAD_USER_INPUT with code INCORRECT when wrong).' })
  currentPassword!: string;

  @MaxLength(PASSWORD_MAX_LENGTH)
  @Field({ description: 'The new password (its length bounds are in the error when it is refused).' })
  newPassword!: string;
}

@ObjectType({ description: 'What changeMyPassword did.' })
export class ChangeMyPasswordPayload {
  @Field({ description: 'True once the new password is in place.' })
  changed!: boolean;
}

@Resolver(() => OAuthAppObject)
export class OAuthServerResolver {
  @Query(() => [OAuthAppObject], { nullable: true, description: 'The apps registered for this account, newest first. can_update_user; a token needs oauth_delegations.read. Nullable: forbidden, it is null with its error and the rest of the page is served.' })
  oauthApps(@Ctx() context: Context): Promise<OAuthApp[]> {
    const principal = requirePrincipal(context);
    return appsService(context).list(principal.accountId);
  }

  @Mutation(() => RegisterOAuthAppPayload, {
    description: 'Registers an app of the caller\'s account; a confidential one\'s secret is answered once. account_admin; a token needs credentials.write '
      + 'and cannot give the app scopes it does not hold. Apps that sign people in without a consent page (WEB, MOBILE, SPA) only with owner rights; '
      + 'any other app shows every user a consent page naming it, its redirect host and who registered it. Audited.',
  })
  async registerOAuthApp(@Arg('input', () => RegisterOAuthAppInput, { description: 'The app to register: its name, kind, redirect URIs and scopes.' }) input: RegisterOAuthAppInput, @Ctx() context: Context): Promise<RegisterOAuthAppPayload> {
    const principal = requirePrincipal(context);
    const created = await appsService(context).create({
      accountId: principal.accountId,
      name: input.name,
      kind: input.kind,
      redirectUris: input.redirectUris,
      scopes: input.scopes.join(' '),
      principal,
    });
    return { app: created.app, clientSecret: created.clientSecret ?? null };
  }

  @Mutation(() => RotateOAuthAppSecretPayload, {
    description: 'Gives a confidential app a new client secret (answered once); the previous one keeps working for previousExpiresIn seconds. '
      + 'account_admin; a token needs credentials.write. Audited.',
  })
  async rotateOAuthAppSecret(@Arg('input', () => RotateOAuthAppSecretInput, { description: 'The app whose secret is replaced, and how long the old secret keeps working.' }) input: RotateOAuthAppSecretInput, @Ctx() context: Context): Promise<RotateOAuthAppSecretPayload> {
    const principal = requirePrincipal(context);
    return appsService(context).rotateSecret(input.clientId, input.previousExpiresIn, { accountId: principal.accountId, principal });
  }

  @Mutation(() => UpdateOAuthAppPayload, {
    description: 'Renames an app, replaces its redirect URIs or scopes, disables or enables it. Disabling refuses its tokens at once on every instance '
      + 'and closes its live connections. account_admin; a token needs credentials.write; new redirect URIs or scopes for, or re-enabling, '
      + 'an app without a consent page (WEB, MOBILE, SPA) only with owner rights. Audited.',
  })
  async updateOAuthApp(@Arg('input', () => UpdateOAuthAppInput, { description: 'The app to change and the fields to change (omitted fields stay).' }) input: UpdateOAuthAppInput, @Ctx() context: Context): Promise<UpdateOAuthAppPayload> {
    const principal = requirePrincipal(context);
    const app = await appsService(context).update(input.clientId, {
      name: input.name ?? undefined,
      redirectUris: input.redirectUris ?? undefined,
      scopes: input.scopes ? input.scopes.join(' ') : undefined,
      disabled: input.disabled ?? undefined,
    }, { accountId: principal.accountId, principal });
    return { app };
  }

  @Mutation(() => DeleteOAuthAppPayload, {
    description: 'Deletes an app and revokes every delegation it holds (its users\' sign-ins, an integration\'s account-wide one). '
      + 'account_admin; a token needs credentials.write. Audited.',
  })
  async deleteOAuthApp(@Arg('input', () => DeleteOAuthAppInput, { description: 'The app to delete.' }) input: DeleteOAuthAppInput, @Ctx() context: Context): Promise<DeleteOAuthAppPayload> {
    const principal = requirePrincipal(context);
    const { app, revokedDelegations } = await appsService(context).delete(input.clientId, principal, principal.accountId);
    return { app, revokedDelegationCount: revokedDelegations };
  }

  @FieldResolver(() => ID, { description: 'The app\'s id: its client id (stable and unique), for client caches.' })
  id(@Root() app: OAuthApp): string {
    return app.clientId;
  }

  @FieldResolver(() => Boolean, { description: 'True while the app is disabled: its tokens are refused and its flows fail.' })
  disabled(@Root() app: OAuthApp): boolean {
    return app.disabledAt !== null;
  }

  @FieldResolver(() => OAuthDelegationObject, {
    nullable: true,
    description: 'An INTEGRATION app\'s account-wide delegation (null for other kinds): revocable with revokeOAuthDelegation(input: {id}). '
      + 'account_admin; a token needs credentials.read (FORBIDDEN otherwise, nulling this field only).',
  })
  async delegation(@Root() app: OAuthApp, @Ctx() context: Context): Promise<OAuthDelegation | null> {
    if (app.kind !== 'integration') return null;
    return new OAuthDelegationsService(context.em, requirePrincipal(context), context.transactions).accountWideOf(app.clientId);
  }

  @Mutation(() => ChangeMyPasswordPayload, {
    description: 'Changes the calling user\'s own sign-in password. Needs a credential that may write the user: the user\'s API key (not a read-only role) '
      + 'or a first-party app\'s token with users.write (never a third-party app\'s or an integration\'s token). The current password is required '
      + '(BAD_USER_INPUT with extensions.fields code INCORRECT at input.currentPassword when wrong; wrong ones count against the sign-in form\'s limits, RATE_LIMITED past them). A change revokes the user\'s other sign-in '
      + 'sessions and OAuth delegations (not the API keys).',
  })
  async changeMyPassword(@Arg('input', () => ChangeMyPasswordInput, { description: 'What to change: see the input type.' }) input: ChangeMyPasswordInput, @Ctx() context: Context): Promise<ChangeMyPasswordPayload> {
    const principal = requirePrincipal(context);
    if (!isUserPrincipal(principal)) throw new InvalidInputError('this credential acts for the account, not a user: there is no own password to change');
    await changeOwnPassword({
      em: context.em,
      transactions: context.transactions,
      principal,
      address: context.clientAddress,
      currentPassword: input.currentPassword,
      newPassword: input.newPassword,
    });
    return { changed: true };
  }
}
