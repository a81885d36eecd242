import type { EntityManager } from '@mikro-orm/sql';
import { isPrivilegedRole, trustedFor, type Authorship } from '../auth/owner-rights.js';
import { recordChange } from '../db/change-journal.js';
import { newPublicId } from '../db/public-id.js';
import { activeUser, LIVE_USER } from '../users/user.sql.js';

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

/** Who last saved the configuration: with owner rights (the operator, an owner) or not, and the user who saved it, if one did. */
export type ConfigurationAuthorship = Authorship;

/**
 * Why single sign-on may not sign in an owner or admin: the configuration was saved neither with
 * owner rights nor by them (`configuration`), or their email vouches for them (a first sign-in that
 * links them by it, or a link made while they were a member) and was last set neither with owner
 * rights nor by them (`email`).
 */
export type PrivilegedRefusal = 'configuration' | 'email';

/** A user single sign-on may sign in, as far as being live and active goes, with what the rule for owners and admins reads. */
interface EligibleUser {
  id: string;
  role: string;
  email_set_by_user_id: string | null;
  email_set_with_owner_rights: boolean;
}

/**
 * The rule that keeps admins (and apps acting for them) from signing in as the owner or another
 * admin: an owner or admin (their role now) is signed in only by a configuration
 * saved with owner rights or by them, and is linked by email only when that email was last set with
 * owner rights or by them. `byEmail`: the email vouches for them (a first link, or a link made
 * while they were a member). Members are not concerned. The sign-in and the password form's
 * lock-out guard both ask this function.
 */
export function privilegedRefusal(user: EligibleUser, byEmail: boolean, configuration: ConfigurationAuthorship): PrivilegedRefusal | undefined {
  if (!isPrivilegedRole(user.role)) return undefined;
  if (!trustedFor(configuration, user.id)) return 'configuration';
  if (byEmail && !trustedFor({ userId: user.email_set_by_user_id, ownerRights: user.email_set_with_owner_rights }, user.id)) return 'email';
  return undefined;
}

/**
 * The one rule for which users single sign-on may sign in: a live, active member of the account.
 * Every SSO sign-in, JIT included, asks only this function, so a user state that must refuse
 * sign-in (suspension) is checked here and nowhere else.
 */
async function eligible(tx: EntityManager, accountId: string, where: string, params: unknown[]): Promise<EligibleUser | undefined> {
  const [row] = await tx.execute<EligibleUser[]>(
    `select u.id, u.role, u.email_set_by_user_id, u.email_set_with_owner_rights from users u
      where u.account_id = ? and ${where} and ${activeUser('u')}`,
    [accountId, ...params],
  );
  return row;
}

/** A linked user, and whether the link was made (or since confirmed) while they were an owner or admin. */
type LinkedUser = EligibleUser & { link_privileged: boolean };

/**
 * The user the provider's subject is linked to, if the link exists; `null` when it exists but its
 * user may not sign in (a linked person never falls back to matching by email).
 */
async function linkedUser(tx: EntityManager, accountId: string, identity: AssertedIdentity): Promise<LinkedUser | null | undefined> {
  const [link] = await tx.execute<{ user_id: string; privileged: boolean }[]>(
    'select user_id, privileged from sso_subject_links where account_id = ? and issuer = ? and subject = ?',
    [accountId, identity.issuer, identity.subject],
  );
  if (!link) return undefined;
  const user = await eligible(tx, accountId, 'u.id = ?', [link.user_id]);
  return user ? { ...user, link_privileged: link.privileged } : null;
}

/**
 * Links the user to the subject; false when the user got another link (or the subject another user)
 * meanwhile. The link remembers whether its user was an owner or admin: a member's link vouches for
 * them as an owner or admin only once their email does (`privilegedRefusal`).
 */
async function link(tx: EntityManager, accountId: string, user: Pick<EligibleUser, 'id' | 'role'>, identity: AssertedIdentity): Promise<boolean> {
  const userId = user.id;
  const inserted = await tx.execute<{ user_id: string }[]>(
    `insert into sso_subject_links (account_id, issuer, subject, user_id, privileged) values (?, ?, ?, ?, ?)
     on conflict do nothing returning user_id`,
    [accountId, identity.issuer, identity.subject, userId, isPrivilegedRole(user.role)],
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

/** Whom the asserted identity is: the user it signs in, or the owner or admin it may not sign in (and why). */
export interface SsoMatch {
  userId: string;
  refused?: PrivilegedRefusal;
}

/**
 * Whether `userId` is an owner or admin the configuration may not sign in (`privilegedRefusal`;
 * linking by email when they have no link yet). Their password keeps working when single sign-on
 * is required, so a configuration an admin saved cannot lock the owner out of the browser.
 */
export async function ssoRefusesPrivilegedUser(tx: EntityManager, accountId: string, userId: string, configuration: ConfigurationAuthorship): Promise<boolean> {
  const user = await eligible(tx, accountId, 'u.id = ?', [userId]);
  if (!user) return false;
  const [link] = await tx.execute<{ privileged: boolean }[]>('select privileged from sso_subject_links where account_id = ? and user_id = ?', [accountId, userId]);
  return privilegedRefusal(user, !link?.privileged, configuration) !== undefined;
}

/** Whether any owner or admin of the account is one the configuration may not sign in (the sign-in page then offers them the password form). */
export async function ssoRefusesSomePrivilegedUser(tx: EntityManager, accountId: string, configuration: ConfigurationAuthorship): Promise<boolean> {
  const users = await tx.execute<Array<EligibleUser & { link_privileged: boolean }>>(
    `select u.id, u.role, u.email_set_by_user_id, u.email_set_with_owner_rights,
            exists (select 1 from sso_subject_links l where l.user_id = u.id and l.privileged) as link_privileged
       from users u where u.account_id = ? and u.role in ('owner', 'admin') and ${activeUser('u')}`,
    [accountId],
  );
  return users.some((user) => privilegedRefusal(user, !user.link_privileged, configuration) !== undefined);
}

const JIT_COLORS = ['green', 'red', 'purple', 'orange', 'teal', 'blue'];

/**
 * The user the asserted identity signs in as. A person is the provider's subject, not an email:
 * a linked subject signs in its user only; an email links (on this first sign-in) only a user who
 * has no link yet, so changing someone's email never moves who a subject is. With just-in-time
 * creation, a subject with no link and an email nobody holds creates a user (role `user`).
 * Concurrent first sign-ins create and link one user: the unique indexes let one insert through.
 * An owner or admin the configuration may not sign in (`privilegedRefusal`) is answered refused:
 * not linked, and never a reason to create someone else.
 */
export async function userForAssertedIdentity(tx: EntityManager, accountId: string, identity: AssertedIdentity, jit: boolean, configuration: ConfigurationAuthorship): Promise<SsoMatch | undefined> {
  const admitLinked = async (user: LinkedUser | null | undefined): Promise<SsoMatch | undefined> => {
    if (!user) return undefined;
    const refused = privilegedRefusal(user, !user.link_privileged, configuration);
    if (refused) return { userId: user.id, refused };
    // A member's link, promoted since, vouched for by their email now: it counts as theirs from here on.
    if (isPrivilegedRole(user.role) && !user.link_privileged) await tx.execute('update sso_subject_links set privileged = true where user_id = ?', [user.id]);
    return { userId: user.id };
  };
  const linkByEmail = async (user: EligibleUser): Promise<SsoMatch | undefined> => {
    const refused = privilegedRefusal(user, true, configuration);
    if (refused) return { userId: user.id, refused };
    // Another first sign-in linked the user, or the subject, meanwhile: the subject's link decides.
    return (await link(tx, accountId, user, identity)) ? { userId: user.id } : admitLinked(await linkedUser(tx, accountId, identity));
  };

  const linked = await linkedUser(tx, accountId, identity);
  if (linked !== undefined) return admitLinked(linked);
  const email = identity.email;
  if (!email) return undefined;
  const unlinked = 'lower(u.email) = lower(?) and not exists (select 1 from sso_subject_links l where l.user_id = u.id)';
  const existing = await eligible(tx, accountId, unlinked, [email]);
  if (existing) return linkByEmail(existing);
  if (!jit) return undefined;
  const name = (identity.name?.trim() || email.split('@')[0] || email).slice(0, 100);
  // Created by nobody the rule for owners and admins trusts: the email columns keep their defaults.
  const created = await tx.execute<{ id: string }[]>(
    `insert into users (id, account_id, name, email, time_zone, color, role, created_via_sso)
     select ?, a.id, ?, ?, a.time_zone, ?, 'user', true from accounts a where a.id = ?
     on conflict (account_id, lower(email)) where ${LIVE_USER} do nothing
     returning id`,
    [newPublicId(), name, email, JIT_COLORS[Math.floor(Math.random() * JIT_COLORS.length)], accountId],
  );
  const user = created[0];
  if (!user) {
    // A concurrent first sign-in created the user: it links it, or already has.
    const raced = await linkedUser(tx, accountId, identity);
    if (raced !== undefined) return admitLinked(raced);
    const holder = await eligible(tx, accountId, unlinked, [email]);
    return holder ? linkByEmail(holder) : undefined;
  }
  recordChange(tx, {
    accountId,
    action: 'create',
    resource: { type: 'user', id: user.id, summary: name },
    userId: user.id,
    fields: [{ name: 'name', value: name }, { name: 'email', value: email }, { name: 'role', value: 'user' }, { name: 'created_via_sso', value: true }],
  });
  return (await link(tx, accountId, { id: user.id, role: 'user' }, identity)) ? { userId: user.id } : undefined;
}
