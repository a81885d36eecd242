import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type { JWK } from 'oidc-provider';
import type { EntityManager } from '@mikro-orm/sql';
import type { Sealer } from './sealing.js';

/** Keys kept after a rotation, so tokens signed before it still verify. */
const KEPT_KEYS = 3;

function newSigningKey(): JWK {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...(privateKey.export({ format: 'jwk' }) as JWK), kid: randomUUID(), use: 'sig', alg: 'RS256' };
}

async function insertKey(em: EntityManager, sealer: Sealer): Promise<string> {
  const jwk = newSigningKey();
  await em.execute('insert into oauth_signing_keys (kid, jwk_sealed, created_at) values (?, ?, clock_timestamp())', [jwk.kid, sealer.seal(JSON.stringify(jwk))]);
  return jwk.kid!;
}

/**
 * The signing keys, newest first (the newest signs). Generated once, on first use, under an
 * advisory lock so concurrent instances agree on one; stored sealed.
 */
export async function loadSigningKeys(em: EntityManager, sealer: Sealer): Promise<JWK[]> {
  const rows = await em.transactional(async (tx) => {
    await tx.execute('select pg_advisory_xact_lock(7212001)');
    const existing = await tx.execute<{ jwk_sealed: string }[]>('select jwk_sealed from oauth_signing_keys order by created_at desc, kid limit ?', [KEPT_KEYS]);
    if (existing.length) return existing;
    await insertKey(tx, sealer);
    return tx.execute<{ jwk_sealed: string }[]>('select jwk_sealed from oauth_signing_keys order by created_at desc, kid limit ?', [KEPT_KEYS]);
  });
  return rows.map((row) => JSON.parse(sealer.unseal(row.jwk_sealed)) as JWK);
}

/** A new signing key becomes the one that signs; the oldest beyond KEPT_KEYS are dropped. Instances pick it up at start. */
export async function rotateSigningKeys(em: EntityManager, sealer: Sealer): Promise<{ kid: string; removed: number }> {
  return em.transactional(async (tx) => {
    await tx.execute('select pg_advisory_xact_lock(7212001)');
    const kid = await insertKey(tx, sealer);
    const removed = await tx.execute<{ affectedRows?: number }>(
      'delete from oauth_signing_keys where kid not in (select kid from oauth_signing_keys order by created_at desc, kid limit ?)',
      [KEPT_KEYS],
      'run',
    );
    return { kid, removed: removed.affectedRows ?? 0 };
  });
}
