import type { EntityManager } from '@mikro-orm/sql';
import Provider, { type Adapter, type AdapterPayload } from 'oidc-provider';
import { digestSecret } from '../auth/secrets.js';
import type { Database } from '../db/database.js';
import type { Sealer } from './sealing.js';
import { clientCredentialsGrantId, clientMetadataFor } from './apps.service.js';
import { recordTokenRevoked, revokeGrantDelegation } from '../oauth-delegations/oauth-delegation.service.js';
import { noteSignInSessionSaved, purgeEndedSignInSessions } from '../oauth-delegations/sign-in-sessions.js';
import { signInMadeBy } from './sign-in-result.js';

interface RecordRow {
  payload: string;
  consumed_at: Date | string | null;
}

type LookupColumn = 'key_digest' | 'uid_digest' | 'user_code_digest';

/** Records that name the session that issued them (`sessionUid`). */
const SESSION_BOUND_MODELS = new Set(['AuthorizationCode', 'AccessToken', 'RefreshToken']);

/** The grant a record belongs to: a grant is its own; a client credentials token, its app's standing grant. */
function grantIdOf(model: string, id: string, payload: AdapterPayload): string | null {
  if (model === 'Grant') return id;
  if (model === 'ClientCredentials' && payload.clientId) return clientCredentialsGrantId(payload.clientId);
  return payload.grantId ?? null;
}

/** Writes a record (sealed, keyed by its id's digest), then what a session or a new interaction calls for. */
async function upsertRecord(database: Database, sealer: Sealer, model: string, id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
  const expiresAt = expiresIn ? new Date(Date.now() + expiresIn * 1000).toISOString() : null;
  await database.em().execute(
    `insert into oauth_server_records (model, key_digest, payload, grant_id, scope, uid_digest, user_code_digest, expires_at, user_id, consumed_at)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, null)
     on conflict (model, key_digest) do update set payload = excluded.payload, grant_id = excluded.grant_id, scope = excluded.scope,
       uid_digest = excluded.uid_digest, user_code_digest = excluded.user_code_digest, expires_at = excluded.expires_at, user_id = excluded.user_id`,
    [
      model,
      digestSecret(id),
      sealer.seal(JSON.stringify(payload)),
      grantIdOf(model, id, payload),
      // Not secret, and what the API's credential resolver needs without unsealing anything.
      typeof payload.scope === 'string' ? payload.scope : null,
      // A code or token carries the uid of the session that issued it: ending that session ends its codes too
      // (`revokeSignInSessions`), and a token knows its sign-in's time and session ("this device", step-up).
      payload.uid ? digestSecret(payload.uid) : SESSION_BOUND_MODELS.has(model) && typeof payload.sessionUid === 'string' ? digestSecret(payload.sessionUid) : null,
      payload.userCode ? digestSecret(payload.userCode) : null,
      expiresAt,
      // Not secret: lets "sign this user out everywhere" find the user's sessions (`endUserAccess`, src/oauth-delegations/user-access.ts).
      signedInUserOf(payload),
    ],
  );
  if (model === 'Session') await noteSession(database.em(), payload);
  // Anyone can start a sign-in (one Interaction row each): abandoned ones go as soon as they expire.
  if (model === 'Interaction') await purgeExpiredInteractions(database.em());
  if (Math.random() * PURGE_ONE_WRITE_IN < 1) await purgeExpiredRecords(database.em());
}

/** A live record by one of its digests: not expired, its grant's delegation not revoked, `consumed` set once it was. */
async function findRecord(database: Database, sealer: Sealer, model: string, column: LookupColumn, digest: string): Promise<AdapterPayload | undefined> {
  const [row] = await database.em().execute<RecordRow[]>(
    `select r.payload, r.consumed_at from oauth_server_records r
      where r.model = ? and r.${column} = ? and (r.expires_at is null or r.expires_at > now())
        and not exists (select 1 from oauth_delegations d where d.grant_id = r.grant_id and d.status <> 'issued')
      limit 1`,
    [model, digest],
  );
  if (!row) return undefined;
  const payload = JSON.parse(sealer.unseal(row.payload)) as AdapterPayload;
  if (row.consumed_at !== null) payload.consumed = Math.floor(new Date(row.consumed_at).getTime() / 1000);
  return payload;
}

function isAccessToken(model: string): boolean {
  return model === 'AccessToken' || model === 'ClientCredentials';
}

/**
 * Only a revocation (RFC 7009) destroys a token: a change that ends access, so the sockets that
 * presented it are re-checked (and closed) on every instance at the commit.
 */
async function revokeToken(database: Database, model: string, id: string): Promise<void> {
  await database.transactions.onBehalfOf({ face: 'oauth', description: 'OAuth token revoked by its app' }).run(database.em(), async (tx) => {
    const [row] = await tx.execute<{ grant_id: string | null }[]>('delete from oauth_server_records where model = ? and key_digest = ? returning grant_id', [model, digestSecret(id)]);
    if (row?.grant_id) await recordTokenRevoked(tx, row.grant_id);
  }, 'oauthServer.revokeToken');
}

/**
 * The library destroys a grant when it revokes it (RFC 7009, a reused refresh token): its
 * delegation goes with it, a recorded write of the authorization server.
 */
async function revokeGrant(database: Database, grantId: string): Promise<void> {
  await database.transactions.onBehalfOf({ face: 'oauth', description: 'OAuth grant revoked by the authorization server' }).run(database.em(), async (tx) => {
    await tx.execute('delete from oauth_server_records where model = ? and key_digest = ?', ['Grant', digestSecret(grantId)]);
    await revokeGrantDelegation(tx, grantId);
  }, 'oauthServer.revokeGrant');
}

/**
 * The library drops every other token of a grant whose token was revoked (RFC 7009), the grant
 * staying: ending access too, so the sockets that presented them are re-checked after this commit,
 * not only after the revoked token's own (which they may have passed).
 */
async function revokeTokensOfGrant(database: Database, model: string, grantId: string): Promise<void> {
  await database.transactions.onBehalfOf({ face: 'oauth', description: 'OAuth tokens of a grant revoked with one of them' }).run(database.em(), async (tx) => {
    const dropped = await tx.execute<{ grant_id: string }[]>('delete from oauth_server_records where model = ? and grant_id = ? returning grant_id', [model, grantId]);
    if (dropped.length) await recordTokenRevoked(tx, grantId);
  }, 'oauthServer.revokeGrantTokens');
}

/**
 * oidc-provider's storage, in PostgreSQL: one row per session, interaction, code, token and grant.
 * Every id is a bearer secret (a token, a code, a cookie value), so rows are keyed by its SHA-256
 * digest and the payload (which repeats the id) is sealed. Nothing is kept in process memory, so
 * any number of instances serve the flows. A record whose grant's delegation is revoked is never
 * found again: that is how a sign-out reaches every token of the grant on the very next request.
 */
export function createAdapterFactory(database: Database, sealer: Sealer, clientSecrets: Sealer) {
  return class PostgresAdapter implements Adapter {
    constructor(private readonly model: string) {}

    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      await upsertRecord(database, sealer, this.model, id, payload, expiresIn);
    }

    async find(id: string): Promise<AdapterPayload | undefined> {
      if (this.model === 'Client') return clientMetadataFor(database.em(), clientSecrets, id);
      return findRecord(database, sealer, this.model, 'key_digest', digestSecret(id));
    }

    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      return findRecord(database, sealer, this.model, 'uid_digest', digestSecret(uid));
    }

    async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      return findRecord(database, sealer, this.model, 'user_code_digest', digestSecret(userCode));
    }

    async consume(id: string): Promise<void> {
      await database.em().execute(
        'update oauth_server_records set consumed_at = now() where model = ? and key_digest = ?',
        [this.model, digestSecret(id)],
      );
    }

    async destroy(id: string): Promise<void> {
      if (isAccessToken(this.model)) return revokeToken(database, this.model, id);
      if (this.model === 'Grant') return revokeGrant(database, id);
      await database.em().execute('delete from oauth_server_records where model = ? and key_digest = ?', [this.model, digestSecret(id)]);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      if (isAccessToken(this.model)) return revokeTokensOfGrant(database, this.model, grantId);
      await database.em().execute('delete from oauth_server_records where model = ? and grant_id = ?', [this.model, grantId]);
    }
  };
}

/**
 * A signed-in session's details (`User.signInSessions`): the save that follows a sign-in carries the
 * interaction's result, which says how the user signed in; the browser's user agent and address are
 * those of the request saving it (the browser's own, resuming its authorization request).
 */
async function noteSession(em: EntityManager, payload: AdapterPayload): Promise<void> {
  const userId = signedInUserOf(payload);
  if (!userId || typeof payload.uid !== 'string') return;
  const request = Provider.ctx as { oidc?: { result?: unknown }; req: { ip?: string }; get(field: string): string } | undefined;
  const made = request ? signInMadeBy(request.oidc?.result) : undefined;
  const loginTs = typeof payload.loginTs === 'number' ? payload.loginTs : undefined;
  await noteSignInSessionSaved(
    em,
    { uidDigest: digestSecret(payload.uid), userId, loginTs, grantIds: grantsOfSession(payload) },
    made && request ? { ...made, userAgent: request.get('user-agent') || undefined, remoteAddress: request.req.ip } : undefined,
  );
}

/** The grants a browser's session made, one per app it signed in to (the library keeps them under `authorizations`). */
function grantsOfSession(payload: AdapterPayload): string[] {
  const authorizations = (payload as { authorizations?: Record<string, { grantId?: unknown }> }).authorizations ?? {};
  return Object.values(authorizations).flatMap((authorization) => (typeof authorization?.grantId === 'string' ? [authorization.grantId] : []));
}

/** The user a session, an interaction or a code belongs to, when it has one. */
function signedInUserOf(payload: AdapterPayload): string | null {
  const interaction = payload as AdapterPayload & { session?: { accountId?: unknown }; result?: { login?: { accountId?: unknown } } };
  const candidate = payload.accountId ?? interaction.session?.accountId ?? interaction.result?.login?.accountId;
  return typeof candidate === 'string' && candidate.length <= 7 ? candidate : null;
}

/** About one write in this many also purges a batch of expired rows: no timer, no extra process. */
const PURGE_ONE_WRITE_IN = 200;
const PURGE_BATCH = 1000;

async function purgeExpiredInteractions(em: EntityManager): Promise<void> {
  await em.execute(
    `delete from oauth_server_records where ctid in (
       select ctid from oauth_server_records where expires_at < now() and model = 'Interaction' limit ${PURGE_INTERACTIONS_BATCH})`,
    [],
    'run',
  );
}

/** More than one sign-in can start per purge, so each purge takes more than one abandoned interaction. */
const PURGE_INTERACTIONS_BATCH = 20;

/**
 * Expired records (and sign-in attempt windows long past) are useless; removing them keeps the
 * tables and their indexes small. Bounded per call, so it never holds locks for long.
 */
export async function purgeExpiredRecords(em: EntityManager): Promise<number> {
  const result = await em.execute<{ affectedRows?: number }>(
    `delete from oauth_server_records where ctid in (select ctid from oauth_server_records where expires_at < now() limit ${PURGE_BATCH})`,
    [],
    'run',
  );
  await purgeEndedSignInSessions(em, PURGE_BATCH);
  await em.execute(`delete from sign_in_attempts where window_started_at < now() - interval '1 day'`, [], 'run');
  await em.execute(`delete from sign_in_failures where last_failed_at < now() - interval '1 day'`, [], 'run');
  return result.affectedRows ?? 0;
}
