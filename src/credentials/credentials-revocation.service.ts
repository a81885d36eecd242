import type { EntityManager } from '@mikro-orm/sql';
import { revokeApiKeysByDigest } from '../accounts/api-keys.service.js';
import { digestSecret } from '../auth/secrets.js';
import type { TransactionRunner } from '../db/transaction.js';
import { InvalidInputError } from '../errors/domain-errors.js';
import { revokeDelegationsHoldingTokens } from '../oauth-delegations/oauth-delegation.service.js';
import { revokeProvisioningTokensByDigest } from '../scim/provisioning-tokens.service.js';

export const MAX_REPORTED_CREDENTIALS = 1_000;
/** Longer than any credential this service issues (API keys and tokens are under 100 characters; bearer tokens are read up to 500). */
export const MAX_REPORTED_CREDENTIAL_LENGTH = 512;

/** `{"credentials": [1..1000 strings]}`, else the reason it is refused (nothing is revoked then). */
export function reportedCredentials(body: unknown): string[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidInputError('the body must be a JSON object {"credentials": ["...", ...]}');
  const credentials = (body as { credentials?: unknown }).credentials;
  if (!Array.isArray(credentials)) throw new InvalidInputError('credentials must be an array of strings');
  if (credentials.length < 1 || credentials.length > MAX_REPORTED_CREDENTIALS) {
    throw new InvalidInputError(`credentials must hold 1 to ${MAX_REPORTED_CREDENTIALS} strings (got ${credentials.length})`);
  }
  const problems: string[] = [];
  credentials.forEach((value, index) => {
    if (typeof value !== 'string') problems.push(`credentials[${index}] must be a string`);
    else if (value.length < 1 || value.length > MAX_REPORTED_CREDENTIAL_LENGTH) problems.push(`credentials[${index}] must be 1 to ${MAX_REPORTED_CREDENTIAL_LENGTH} characters`);
  });
  if (problems.length) throw new InvalidInputError(problems.slice(0, 10));
  return credentials as string[];
}

/**
 * Revocation by possession: holding a secret is the right to end it. Every live
 * API key, provisioning token and OAuth access or refresh token among `secrets` is revoked (a token
 * with its whole delegation), in one transaction whose records say `credential reported`. The
 * caller learns nothing of what was found.
 */
export async function revokeReportedCredentials(em: EntityManager, transactions: TransactionRunner, secrets: readonly string[]): Promise<void> {
  const digests = [...new Set(secrets.map((secret) => digestSecret(secret)))];
  await transactions.run(em, async (tx) => {
    const at = new Date();
    await revokeApiKeysByDigest(tx, digests, at);
    await revokeProvisioningTokensByDigest(tx, digests, at);
    await revokeDelegationsHoldingTokens(tx, digests, at);
  }, 'credentials.revokeReported');
}
