import { Arg, Ctx, Field, FieldResolver, ID, InputType, Int, Mutation, ObjectType, Resolver, Root, registerEnumType } from 'type-graphql';
import { DateTimeResolver } from 'graphql-scalars';
import { requirePrincipal, type Context } from '../graphql/context.js';
import { UserType } from '../users/user.type.js';
import { SignInSessionsService, type SignInMethodKind, type SignInSessionView } from './sign-in-sessions.js';

export const SignInMethodEnum = {
  PASSWORD: 'password',
  SINGLE_SIGN_ON: 'single_sign_on',
} as const satisfies Record<string, SignInMethodKind>;

registerEnumType(SignInMethodEnum, {
  name: 'SignInMethod',
  description: 'How a browser signed in.',
  valuesConfig: {
    PASSWORD: { description: 'With the user\'s email and password on the sign-in page.' },
    SINGLE_SIGN_ON: { description: 'Through the account\'s identity provider (OIDC or SAML single sign-on).' },
  },
});

@ObjectType('SignInSession', {
  description: 'A browser\'s sign-in session at the authorization server: while it lives, that browser gets new codes for the user\'s apps without signing in again.',
})
export class SignInSessionObject {
  @Field(() => ID, { description: 'The session\'s id: stable for its life, and no secret (it cannot be used to act as the session).' })
  id!: string;

  @Field(() => DateTimeResolver, { description: 'When the browser signed in.' })
  createdAt!: Date;

  @Field(() => DateTimeResolver, { description: 'When the browser last used the session (its last authorization request).' })
  lastActiveAt!: Date;

  @Field(() => DateTimeResolver, { nullable: true, description: 'When the session ends unless it is revoked before.' })
  expiresAt!: Date | null;

  @Field(() => SignInMethodEnum, { description: 'How the browser signed in.' })
  method!: SignInMethodKind;

  @Field(() => String, { nullable: true, description: 'The name of the identity provider the user signed in at; null for a password sign-in.' })
  identityProvider!: string | null;

  @Field(() => String, { nullable: true, description: 'The User-Agent the browser sent when it signed in (up to 512 characters).' })
  userAgent!: string | null;

  @Field(() => String, { nullable: true, description: 'The address the browser signed in from, as the service derives it (TRUST_PROXY).' })
  remoteAddress!: string | null;

  @Field(() => Boolean, { description: 'True for the session of the browser making this request: the one its cookie names, or the one its token came from (a token remembers the sign-in that obtained it); false for every other, and for requests made with an API key.' })
  current!: boolean;
}

@InputType({ description: 'Ends sign-in sessions of a user: the ones named by ids, or all of them (allButCurrent keeps the caller\'s own).' })
export class RevokeSignInSessionsInput {
  @Field(() => ID, { description: 'The user whose sessions to end.' })
  userId!: string;

  @Field(() => [ID], { nullable: true, description: 'The sessions to end (SignInSession.id, all of the user\'s; at most 100); omitted: all of them. Not with allButCurrent.' })
  ids?: string[] | null;

  @Field(() => Boolean, { nullable: true, description: 'With ids omitted: true keeps the session of the browser making this request and ends every other. Not with ids.' })
  allButCurrent?: boolean | null;
}

@ObjectType({ description: 'What revokeSignInSessions changed.' })
export class RevokeSignInSessionsPayload {
  @Field(() => Int, { description: 'How many sign-in sessions this call ended.' })
  revokedCount!: number;

  @Field(() => [ID], { description: 'The ids of the sign-in sessions this call ended (`SignInSession.id`), so a client can drop them from its page; a session from before sessions were listed has none.' })
  revokedSessionIds!: string[];
}

function signInSessionsService(context: Context): SignInSessionsService {
  return new SignInSessionsService(context.em, requirePrincipal(context), context.transactions, context.browserSession);
}

@Resolver(() => SignInSessionObject)
export class SignInSessionResolver {
  // No `write` requirement: ending sessions lowers access, as revoking a delegation does.
  @Mutation(() => RevokeSignInSessionsPayload, {
    description: 'Ends sign-in sessions of a user before answering: each browser whose session ended sees the sign-in page at its next authorization request. '
      + 'Delegations (and their tokens) stay. The user themself or can_update_user.',
  })
  async revokeSignInSessions(
    @Arg('input', () => RevokeSignInSessionsInput, { description: 'What to change: see the input type.' }) input: RevokeSignInSessionsInput,
    @Ctx() context: Context,
  ): Promise<RevokeSignInSessionsPayload> {
    const { count, sessionIds } = await signInSessionsService(context).revoke(input);
    return { revokedCount: count, revokedSessionIds: sessionIds };
  }
}

/** `User.signInSessions`: nullable, so a caller who may not see them loses that field only. */
@Resolver(() => UserType)
export class UserSignInSessionsResolver {
  @FieldResolver(() => [SignInSessionObject], {
    nullable: true,
    description: 'The user\'s live sign-in sessions, most recently active first. The user themself or can_update_user (FORBIDDEN otherwise).',
  })
  signInSessions(@Root() user: { id: string }, @Ctx() context: Context): Promise<SignInSessionView[]> {
    return signInSessionsService(context).listFor(user.id);
  }
}
