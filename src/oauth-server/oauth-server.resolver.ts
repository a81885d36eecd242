import { Arg, Authorized, Ctx, Field, ID, InputType, Mutation, ObjectType, Query, Resolver, registerEnumType } from 'type-graphql';
import { DateTimeResolver } from 'graphql-scalars';
import type { Requirement } from '../auth/auth-checker.js';
import { isUserPrincipal } from '../auth/principal.js';
import { InvalidInputError } from '../errors/domain-errors.js';
import { requirePrincipal, type Context } from '../graphql/context.js';
import { AppsService } from './apps.service.js';
import type { AppKind, OAuthApp } from './oauth-app.entity.js';
import { changeOwnPassword, PASSWORD_MAX_LENGTH } from './passwords.js';
import { MaxLength } from '../graphql/input-bounds.js';
import { sealersFor } from './provider.js';

export const OAuthAppKindEnum = {
  MOBILE: 'mobile',
  WEB: 'web',
  INTEGRATION: 'integration',
  THIRD_PARTY: 'third_party',
} as const satisfies Record<string, AppKind>;

registerEnumType(OAuthAppKindEnum, {
  name: 'OAuthAppKind',
  valuesConfig: {
    WEB: { description: 'The first-party web app (confidential client).' },
    MOBILE: { description: 'The first-party mobile app (public client, PKCE).' },
    THIRD_PARTY: { description: 'A third-party app acting as users who consent.' },
    INTEGRATION: { description: 'An integration acting for the account (client credentials).' },
  },
  description: 'MOBILE: public client (PKCE, no secret). WEB: first-party confidential client. THIRD_PARTY: confidential, users consent. INTEGRATION: acts for the account (client credentials).',
});

@ObjectType('OAuthApp', { description: 'An app registered with the authorization server (an OAuth client of the account). Its secret is never shown again.' })
export class OAuthAppObject implements Partial<Record<keyof OAuthApp, unknown>> {
  @Field(() => ID, { description: 'The OAuth client id.' })
  clientId!: string;

  @Field({ description: 'The app\'s name, shown on the consent page.' })
  name!: string;

  @Field(() => OAuthAppKindEnum, { description: 'What kind of app it is, which decides its flows.' })
  kind!: AppKind;

  @Field(() => [String], { description: 'The exact redirect URIs the app may use.' })
  redirectUris!: string[];

  @Field({ description: 'The scopes the app may ask for, space-separated.' })
  scope!: string;

  @Field(() => DateTimeResolver, { description: 'When the app was registered.' })
  createdAt!: Date;
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
  @Authorized<Requirement>('oauth_delegations.read', 'can_update_user')
  @Query(() => [OAuthAppObject], { description: 'The apps registered for this account, newest first. can_update_user; a token needs oauth_delegations.read.' })
  oauthApps(@Ctx() context: Context): Promise<OAuthApp[]> {
    const principal = requirePrincipal(context);
    return new AppsService(context.em, sealersFor(context.runtime.serverSecret).clientSecrets, context.transactions).list(principal.accountId);
  }

  @Authorized<Requirement>('users.write', 'write')
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
