import type { EntityManager } from '@mikro-orm/sql';
import { recordChange } from '../db/change-journal.js';
import { newPublicId } from '../db/public-id.js';

/**
 * Who the identity provider vouched for: its stable subject (OIDC `iss` + `sub`; SAML issuer +
 * NameID), and the email it asserts, when it asserts a usable one (needed only for a first link).
 */
export interface AssertedIdentity {
  issuer: string;
  subject: string;
  email?: string;
  name?: string;
}

/**
 * The one rule for which users single sign-on may sign in: a live, active member of the account.
 * Every SSO sign-in, JIT included, asks only this function, so a user state that must refuse
 * sign-in (suspension) is checked here and nowhere else.
 */
async function eligible(tx: EntityManager, accountId: string, where: string, params: unknown[]): Promise<string | undefined> {
  const [row] = await tx.execute<{ id: string }[]>(
    `select u.id from users u where u.account_id = ? and ${where} and u.deleted_at is null and u.suspended_at is null`,
    [accountId, ...params],
  );
  return row?.id;
}

/**
 * The user the provider's subject is linked to, if the link exists; `null` when it exists but its
 * user may not sign in (a linked person never falls back to matching by email).
 */
async function linkedUser(tx: EntityManager, accountId: string, identity: AssertedIdentity): Promise<string | null | undefined> {
  const [link] = await tx.execute<{ user_id: string }[]>(
    'select user_id from sso_subject_links where account_id = ? and issuer = ? and subject = ?',
    [accountId, identity.issuer, identity.subject],
  );
  if (!link) return undefined;
  return (await eligible(tx, accountId, 'u.id = ?', [link.user_id])) ?? null;
}

/** Links `userId` to the subject; false when the user got another link (or the subject another user) meanwhile. */
async function link(tx: EntityManager, accountId: string, userId: string, identity: AssertedIdentity): Promise<boolean> {
  const inserted = await tx.execute<{ user_id: string }[]>(
    `insert into sso_subject_links (account_id, issuer, subject, user_id) values (?, ?, ?, ?)
     on conflict do nothing returning user_id`,
    [accountId, identity.issuer, identity.subject, userId],
  );
  if (inserted.length === 0) return false;
  recordChange(tx, {
    accountId,
    action: 'update',
    resource: { type: 'user', id: userId },
    userId,
    fields: [{ name: 'single_sign_on_subject', value: `${identity.issuer} ${identity.subject}`.slice(0, 300) }],
  });
  return true;
}

const JIT_COLORS = ['green', 'red', 'purple', 'orange', 'teal', 'blue'];

/**
 * The user the asserted identity signs in as. A person is the provider's subject, not an email:
 * a linked subject signs in its user only; an email links (on this first sign-in) only a user who
 * has no link yet, so changing someone's email never moves who a subject is. With just-in-time
 * creation, a subject with no link and an email nobody holds creates a user (role `user`).
 * Concurrent first sign-ins create and link one user: the unique indexes let one insert through.
 */
export async function userForAssertedIdentity(tx: EntityManager, accountId: string, identity: AssertedIdentity, jit: boolean): Promise<string | undefined> {
  const linked = await linkedUser(tx, accountId, identity);
  if (linked !== undefined) return linked ?? undefined;
  const email = identity.email;
  if (!email) return undefined;
  const unlinked = 'lower(u.email) = lower(?) and not exists (select 1 from sso_subject_links l where l.user_id = u.id)';
  const existing = await eligible(tx, accountId, unlinked, [email]);
  if (existing) return (await link(tx, accountId, existing, identity)) ? existing : (await linkedUser(tx, accountId, identity)) ?? undefined;
  if (!jit) return undefined;
  const name = (identity.name?.trim() || email.split('@')[0] || email).slice(0, 100);
  const created = await tx.execute<{ id: string }[]>(
    `insert into users (id, account_id, name, email, time_zone, color, role, created_via_sso)
     select ?, a.id, ?, ?, a.time_zone, ?, 'user', true from accounts a where a.id = ?
     on conflict (account_id, lower(email)) where deleted_at is null do nothing
     returning id`,
    [newPublicId(), name, email, JIT_COLORS[Math.floor(Math.random() * JIT_COLORS.length)], accountId],
  );
  const user = created[0];
  if (!user) {
    // A concurrent first sign-in created the user: it links it, or already has.
    return (await linkedUser(tx, accountId, identity)) ?? (await eligible(tx, accountId, unlinked, [email]).then(async (id) => (id && (await link(tx, accountId, id, identity)) ? id : undefined)));
  }
  recordChange(tx, {
    accountId,
    action: 'create',
    resource: { type: 'user', id: user.id, summary: name },
    userId: user.id,
    fields: [{ name: 'name', value: name }, { name: 'email', value: email }, { name: 'role', value: 'user' }, { name: 'created_via_sso', value: true }],
  });
  return (await link(tx, accountId, user.id, identity)) ? user.id : undefined;
}
