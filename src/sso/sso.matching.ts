import type { EntityManager } from '@mikro-orm/sql';
import { recordChange } from '../db/change-journal.js';
import { newPublicId } from '../db/public-id.js';

export interface AssertedIdentity {
  email: string;
  name?: string;
}

/**
 * The one rule for which users single sign-on may sign in: a live member of the account with
 * that email (case-insensitive). Every SSO sign-in, JIT included, asks only this function, so a
 * user state that must refuse sign-in (suspension) is checked here and nowhere else.
 */
export async function signInEligibleUser(tx: EntityManager, accountId: string, email: string): Promise<string | undefined> {
  const [row] = await tx.execute<{ id: string }[]>(
    'select id from users where account_id = ? and lower(email) = lower(?) and deleted_at is null and suspended_at is null',
    [accountId, email],
  );
  return row?.id;
}

const JIT_COLORS = ['green', 'red', 'purple', 'orange', 'teal', 'blue'];

/**
 * The user the asserted identity signs in as, created (role `user`, `created_via_sso`) when the
 * account allows just-in-time creation and no user holds the email. Concurrent first sign-ins
 * create one user: the live-email unique index lets one insert through and the others do nothing.
 */
export async function userForAssertedIdentity(tx: EntityManager, accountId: string, identity: AssertedIdentity, jit: boolean): Promise<string | undefined> {
  const existing = await signInEligibleUser(tx, accountId, identity.email);
  if (existing || !jit) return existing;
  const name = (identity.name?.trim() || identity.email.split('@')[0] || identity.email).slice(0, 100);
  const created = await tx.execute<{ id: string; color: string }[]>(
    `insert into users (id, account_id, name, email, time_zone, color, role, created_via_sso)
     select ?, a.id, ?, ?, a.time_zone, ?, 'user', true from accounts a where a.id = ?
     on conflict (account_id, lower(email)) where deleted_at is null do nothing
     returning id, color`,
    [newPublicId(), name, identity.email, JIT_COLORS[Math.floor(Math.random() * JIT_COLORS.length)], accountId],
  );
  for (const user of created) {
    recordChange(tx, {
      accountId,
      action: 'create',
      resource: { type: 'user', id: user.id, summary: name },
      userId: user.id,
      fields: [{ name: 'name', value: name }, { name: 'email', value: identity.email }, { name: 'role', value: 'user' }, { name: 'created_via_sso', value: true }],
    });
  }
  // A row just inserted is live and not suspended; only a concurrent sign-in's row (the conflict) is looked up.
  return created[0]?.id ?? signInEligibleUser(tx, accountId, identity.email);
}
