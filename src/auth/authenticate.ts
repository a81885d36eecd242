import type { EntityManager } from '@mikro-orm/sql';
import { AuthenticationError } from '../errors/domain-errors.js';
import { credentialTail, parseAuthorizationHeader } from './credentials.js';
import type { Face, Principal } from './principal.js';

/**
 * A feature that issues credentials (API keys, OAuth delegations) resolves its own by digest;
 * auth only routes the presented credential to the resolver for its scheme.
 */
export interface CredentialResolver {
  scheme: 'token' | 'bearer';
  /**
   * A resolver whose credentials all begin with this (non-secret) prefix is asked only for
   * credentials that do, and before the others: its look-up never runs for the other credentials
   * of the scheme, and theirs do not run before it for its own.
   */
  prefix?: string;
  /** Undefined: not one of this resolver's credentials. Throws `AuthenticationError` to refuse one of its own with a reason (an expired key). */
  resolve(em: EntityManager, digest: string, now: Date): Promise<Principal | undefined>;
}

export type Authentication =
  | { status: 'anonymous' }
  | { status: 'authenticated'; principal: Principal }
  | { status: 'rejected'; error: AuthenticationError; wrongFace?: true };

/**
 * Read from the database on every request: a revoked key or token is refused at once, everywhere.
 * `face` is where it was presented: a credential confined to another face is refused like an
 * unknown one, so no transport (a new one included) can accept it by forgetting a check.
 */
export async function authenticate(
  em: EntityManager,
  authorizationHeader: string | undefined,
  resolvers: readonly CredentialResolver[],
  face: Face,
): Promise<Authentication> {
  const presented = parseAuthorizationHeader(authorizationHeader);
  if (!presented) return { status: 'anonymous' };
  if (presented.scheme === 'malformed') {
    return { status: 'rejected', error: new AuthenticationError('The Authorization header must be "Token token=<API key>" or "Bearer <access token>".') };
  }
  const { secret } = presented;
  // Two passes over the resolvers instead of an ordered copy of them per request.
  for (const prefixed of [true, false]) {
    for (const resolver of resolvers) {
      if (resolver.scheme !== presented.scheme || (resolver.prefix !== undefined) !== prefixed) continue;
      if (prefixed && !secret.startsWith(resolver.prefix!)) continue;
      let principal: Principal | undefined;
      try {
        principal = await resolver.resolve(em, presented.digest, new Date());
      } catch (error) {
        if (error instanceof AuthenticationError) return { status: 'rejected', error };
        throw error;
      }
      if (!principal) continue;
      if (principal.confinedTo !== undefined && principal.confinedTo !== face) {
        return { status: 'rejected', error: new AuthenticationError(`This credential is valid only on the ${principal.confinedTo} face.`), wrongFace: true };
      }
      return { status: 'authenticated', principal: { ...principal, credentialTail: credentialTail(presented.secret) } };
    }
  }
  return { status: 'rejected', error: new AuthenticationError('The credential is unknown, revoked or expired.') };
}
