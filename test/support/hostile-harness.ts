import { buildClientSchema, getIntrospectionQuery, type GraphQLSchema, type IntrospectionQuery } from 'graphql';
import supertest from 'supertest';
import { ProvisioningTokensService } from '../../src/scim/provisioning-tokens.service.js';
import type { Credential, Harness } from './harness.js';
import { useHarness } from './use-harness.js';

/**
 * What the hostile-input property tests share. Their properties: never a 5xx; every REST error is
 * the v2 envelope with a documented code; every GraphQL error carries extensions.code (a
 * client-error code); no message quotes more than a short excerpt of the input; a rejected write
 * changes no row. Seeded: set HOSTILE_INPUT_SEED to replay a failure (fast-check prints the seed
 * and the shrunk counterexample); HOSTILE_INPUT_RUNS raises the number of runs per face.
 */
export const SEED = Number(process.env.HOSTILE_INPUT_SEED ?? Math.floor(Math.random() * 2 ** 31));
export const RUNS = Number(process.env.HOSTILE_INPUT_RUNS ?? 100);
/** No error message may carry more than a short excerpt of what the client sent. */
export const MAX_QUOTED = 1_000;

export function authorization(credential: Credential): Record<string, string> {
  if (!credential) return {};
  if ('token' in credential) return { Authorization: `Token token=${credential.token}` };
  if ('bearer' in credential) return { Authorization: `Bearer ${credential.bearer}` };
  return { Authorization: credential.header };
}

/**
 * Rows a refused request writes on purpose: a failed sign-in is counted (that is the per-email and
 * per-address limit), and the authorization server makes its signing key on first use.
 */
const BOOKKEEPING_TABLES = new Set(['sign_in_attempts', 'oauth_signing_keys']);

/** A digest of every row of every product table: equal before and after means nothing was written. */
export async function fingerprint(harness: Harness): Promise<string> {
  const em = harness.database.em();
  const tables = await em.execute<{ tablename: string }[]>("select tablename from pg_tables where schemaname = 'public' order by tablename");
  const parts: string[] = [];
  for (const { tablename } of tables) {
    if (BOOKKEEPING_TABLES.has(tablename)) continue;
    // A credential's `last_used_at` is bookkeeping too: any request with a credential may record its use.
    const [row] = await em.execute<{ digest: string | null }[]>(`select md5(coalesce(string_agg(r, '|' order by r), '')) as digest from (select (to_jsonb(t) - 'last_used_at')::text as r from "${tablename}" t) rows`);
    parts.push(`${tablename}:${row?.digest}`);
  }
  return parts.join(',');
}

/** What hostile requests are aimed at, and sent with. */
export interface HostileTargets {
  harness: Harness;
  /** Requests to the app's own server, so Node's refusals (431 for a head over 16 KB) go through its clientError handling too. */
  agent: ReturnType<typeof supertest>;
  /** Every kind of caller: full and read-only account keys, a member's and an admin's, none, a forged key, an overlong bearer. */
  credentials: Credential[];
  /** Ids that exist (the owner, the member, the admin), one that does not, and `me`. */
  realIds: string[];
  /** SCIM tokens of the account and of another account. */
  provisioningCredentials: Credential[];
  /** The GraphQL schema as introspection shows it to the account's key. */
  schema: GraphQLSchema;
}

/** One harness for the file's tests, listening, with an account to aim at: started before them and closed after. */
export function useHostileTargets(started: (targets: HostileTargets) => void): void {
  useHarness({}, async (harness) => {
    await new Promise<void>((resolve) => harness.httpServer.listen(0, '127.0.0.1', resolve));
    const agent = supertest(harness.httpServer);
    const account = await harness.createAccount();
    const member = await harness.createUser(account, { role: 'user' });
    const admin = await harness.createUser(account, { role: 'admin' });
    const credentials = [account.key, await harness.accountKey(account, { readOnly: true }), member.key, admin.key, undefined, { header: 'Token token=forged' }, { bearer: 'x'.repeat(300) }];
    const realIds = [account.ownerId, member.id, admin.id, 'P000000', 'me'];
    const provisioning = await harness.database.transactions.run(harness.database.em(), (tx) => new ProvisioningTokensService(tx).create(account.id));
    const otherAccount = await harness.createAccount();
    const otherProvisioning = await harness.database.transactions.run(harness.database.em(), (tx) => new ProvisioningTokensService(tx).create(otherAccount.id));
    const provisioningCredentials = [{ bearer: provisioning.token }, { bearer: otherProvisioning.token }, { bearer: provisioning.token }];
    const introspection = await agent.post('/graphql').set(authorization(account.key)).send({ query: getIntrospectionQuery() });
    const schema = buildClientSchema(introspection.body.data as IntrospectionQuery);
    started({ harness, agent, credentials, realIds, provisioningCredentials, schema });
  });
}
