import { UniqueConstraintViolationException, type FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/sql';
import { Account } from '../accounts/account.entity.js';
import { authorshipOf, trustedFor } from '../auth/owner-rights.js';
import { canUpdateUser, isUserPrincipal, type Principal } from '../auth/principal.js';
import { policy } from '../auth/policy.js';
import { DuplicateValueError, ForbiddenError, InvalidInputError, NotFoundError, StaleVersionError, type FieldProblem } from '../errors/domain-errors.js';
import { PUBLIC_ID_PATTERN, newPublicId } from '../db/public-id.js';
import type { TransactionRunner } from '../db/transaction.js';
import { recordChange } from '../db/change-journal.js';
import { User } from './user.entity.js';
import { restName } from './user.fields.js';
import type { UserLifecycleHooks } from './user-lifecycle.js';
import { lockLiveUser } from './user-locks.js';
import type { UserRow } from './user.reads.js';
import { UserWrites, userChangedFields, type EmailAuthorship, type LockedUser, type UserPatch } from './user.writes.js';
import { normalizeEmail, userFieldProblems, validateUserFields, type UserFieldProblem, type UserFields } from './user.validation.js';

export const MAX_USERS_PER_BULK_UPDATE = 100;
export const MAX_PAGE_SIZE = 100;
const COLORS = ['green', 'red', 'purple', 'orange', 'teal', 'blue', 'brown', 'cayenne', 'forest-green', 'navy', 'violet', 'turquoise'];

export type { UserPatch } from './user.writes.js';

const EMAIL_TAKEN = 'email has already been taken';
const EXTERNAL_ID_TAKEN = 'externalId has already been taken';

/** A unique index of live users refused the write: the value another user holds, as the checks before it would have said. */
function duplicateOf(error: unknown): DuplicateValueError | undefined {
  if (!(error instanceof UniqueConstraintViolationException)) return undefined;
  if (/users_account_email_live_uniq/.test(error.message)) return new DuplicateValueError('email', EMAIL_TAKEN);
  if (/users_account_external_id_live_uniq/.test(error.message)) return new DuplicateValueError('externalId', EXTERNAL_ID_TAKEN);
  return undefined;
}

export class UsersService {
  constructor(
    private readonly em: EntityManager,
    private readonly principal: Principal,
    private readonly transactions: TransactionRunner,
    private readonly hooks: UserLifecycleHooks = {},
    private readonly newId: () => string = newPublicId,
  ) {}

  private liveUserFilter(id: string): FilterQuery<User> {
    return { id, account: this.principal.accountId, deletedAt: null };
  }

  /** A user of the caller's account; another account's id is indistinguishable from a missing one. */
  async get(id: string, em: EntityManager = this.em): Promise<User> {
    const user = PUBLIC_ID_PATTERN.test(id) ? await em.findOne(User, this.liveUserFilter(id)) : null;
    if (!user) throw new NotFoundError('user');
    return user;
  }

  /** `active: false` creates the user suspended (an identity provider may provision a user it has not yet let in). */
  async create(fields: UserFields & { active?: boolean | null }): Promise<User> {
    policy.assertCanUpdateUsers(this.principal);
    const problems = userFieldProblems(fields, { creating: true }).map((problem) => inputFieldProblem(['input'], problem));
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.transactions.run(this.em, async (em) => {
          const writes = new UserWrites(em, this.principal.accountId);
          const checkable = typeof fields.email === 'string' && !problems.some((problem) => problem.path[1] === 'email');
          const taken = checkable && (await writes.emailHolders([normalizeEmail(fields.email!)])).size > 0 ? [emailTakenAt(['input'])] : [];
          // A taken email joins the input's other problems, so one answer names them all.
          if (problems.length) throw InvalidInputError.ofFields([...problems, ...taken]);
          if (taken.length) throw new DuplicateValueError('email', taken);
          if (fields.externalId != null && (await writes.externalIdHolders([fields.externalId])).size) throw new DuplicateValueError('externalId', EXTERNAL_ID_TAKEN);
          const { timeZone: accountTimeZone } = await em.findOneOrFail(Account, { id: this.principal.accountId });
          const emailSetBy = authorshipOf(this.principal);
          const user = em.create(User, {
            id: this.newId(),
            account: em.getReference(Account, this.principal.accountId),
            name: fields.name!.trim(),
            email: fields.email!.trim(),
            timeZone: fields.timeZone ?? accountTimeZone,
            color: fields.color ?? COLORS[Math.floor(Math.random() * COLORS.length)]!,
            role: fields.role ?? 'user',
            description: fields.description ?? null,
            jobTitle: fields.jobTitle ?? null,
            externalId: fields.externalId ?? null,
            suspendedAt: fields.active === false ? new Date() : null,
            emailSetByUserId: emailSetBy.userId,
            emailSetWithOwnerRights: emailSetBy.ownerRights,
          });
          await em.persist(user).flush();
          recordChange(em, { accountId: this.principal.accountId, action: 'create', resource: { type: 'user', id: user.id, summary: user.name }, userId: user.id, fields: createdFields(user) });
          return user;
        }, 'users.create');
      } catch (error) {
        const duplicate = duplicateOf(error);
        if (duplicate) throw duplicate;
        // Ids are random and never reused: a collision with a live user or a tombstone draws again.
        if (error instanceof UniqueConstraintViolationException && attempt < 3) continue;
        throw error;
      }
    }
  }

  /** `fields`: the User fields the caller presents (GraphQL selection), as for the reads. */
  async update(patch: UserPatch, fields: Iterable<string>): Promise<UserRow> {
    const [user] = await this.updateMany([patch], fields, { single: true });
    return user!;
  }

  /**
   * All or nothing: every element is checked before any is written, in one transaction. The rows
   * are locked and read, and then written, by plain statements (UserWrites, src/db/write-path.ts):
   * no entity is loaded for a bulk update.
   */
  async updateMany(patches: UserPatch[], fields: Iterable<string>, options: { single?: boolean } = {}): Promise<UserRow[]> {
    if (!options.single && (patches.length === 0 || patches.length > MAX_USERS_PER_BULK_UPDATE)) {
      throw new InvalidInputError(`users must hold 1 to ${MAX_USERS_PER_BULK_UPDATE} elements`);
    }
    return this.transactions.run(this.em, async (em) => {
      const writes = new UserWrites(em, this.principal.accountId);
      const label = (index: number) => (options.single ? '' : `users[${index}].`);
      // Every target row is locked before any is changed, in one statement in id order: whatever
      // order clients list users in, overlapping updates queue up instead of deadlocking.
      const byId = new Map((await writes.lockForUpdate(patches.map((patch) => patch.id))).map((user) => [user.id, user]));
      const problems: FieldProblem[] = [];
      const at = (index: number) => (options.single ? ['input'] : ['input', 'users', index]);
      const problem = (index: number, field: string, code: string, detail: string) =>
        problems.push({ path: [...at(index), field], code, message: `${label(index)}${field} ${detail}` });
      const seen = new Set<string>();
      const emails = new Map<string, number>();

      patches.forEach((patch, index) => {
        const user = byId.get(patch.id);
        if (!user) {
          if (options.single) throw new NotFoundError('user');
          problem(index, 'id', 'NOT_FOUND', `${patch.id} is not a user of this account`);
          return;
        }
        if (seen.has(patch.id)) problem(index, 'id', 'DUPLICATE', `${patch.id} appears more than once`);
        seen.add(patch.id);
        // Authorization decides first: someone who may not change the user learns nothing, not even that it changed.
        this.assertMayChange(user, patch);
        if (patch.expectedVersion != null && patch.expectedVersion !== user.version) throw new StaleVersionError();
        if (patch.active === false && user.role === 'owner') problems.push({ path: [...at(index), 'active'], code: 'NOT_ALLOWED', message: `${label(index)}the account owner cannot be suspended` });
        for (const fieldProblem of userFieldProblems(patch, { creating: false, storedColor: user.color })) problems.push(inputFieldProblem(at(index), fieldProblem, label(index)));
        if (patch.role !== undefined && patch.role !== user.role && user.role === 'owner') {
          problem(index, 'role', 'NOT_ALLOWED', 'of the account owner cannot be changed');
        }
        // A null email is refused with the other problems; only a string takes part in the duplicate check.
        if (typeof patch.email === 'string') {
          const email = normalizeEmail(patch.email);
          if (emails.has(email)) problem(index, 'email', 'DUPLICATE', `is also given to users[${emails.get(email)}]`);
          emails.set(email, index);
        }
      });

      // Emails that change (and are not refused already), checked against the other users of the
      // account in one statement, each taken one at its element. Users of this batch may hand theirs
      // on: if one keeps it after all, the unique index refuses the update below.
      const reported = new Set(problems.map((problem) => JSON.stringify(problem.path)));
      const changing = patches.flatMap((patch, index) => {
        const user = byId.get(patch.id);
        if (!user || typeof patch.email !== 'string' || reported.has(JSON.stringify([...at(index), 'email']))) return [];
        const email = normalizeEmail(patch.email);
        return email !== normalizeEmail(user.email) ? [{ email, index }] : [];
      });
      const holders = await writes.emailHolders(changing.map((change) => change.email));
      const batch = new Set(patches.map((patch) => patch.id));
      const taken = changing.filter((change) => holders.has(change.email) && !batch.has(holders.get(change.email)!)).map((change) => emailTakenAt(at(change.index), label(change.index)));
      // A taken email joins the input's other problems, so one answer names them all.
      if (problems.length) throw InvalidInputError.ofFields([...problems, ...taken]);
      if (taken.length) throw new DuplicateValueError('email', taken);
      const externalIds = patches.flatMap((patch, index) => (patch.externalId != null && patch.externalId !== byId.get(patch.id)!.externalId ? [{ externalId: patch.externalId, index }] : []));
      const externalIdHolders = await writes.externalIdHolders(externalIds.map((change) => change.externalId));
      const takenExternalId = externalIds.find((change) => externalIdHolders.has(change.externalId) && !batch.has(externalIdHolders.get(change.externalId)!));
      if (takenExternalId) throw new DuplicateValueError('externalId', `${label(takenExternalId.index)}${EXTERNAL_ID_TAKEN}`);

      await this.changeSuspensions(em, patches.filter((patch) => patch.active != null && patch.active !== byId.get(patch.id)!.active));
      try {
        return await writes.apply(patches, fields, byId, this.emailAuthorship(patches, new Set(changing.map((change) => patches[change.index]!.id))));
      } catch (error) {
        throw duplicateOf(error) ?? error;
      }
    }, options.single ? 'users.update' : 'users.updateMany');
  }

  /**
   * Who set the emails the patches give: a first single sign-on links an owner or admin by an email
   * only when it was set with owner rights or by that user (src/auth/owner-rights.ts). A changed
   * email is the caller's; an email saved unchanged becomes the caller's only when that makes it
   * trusted (the owner, or the user themself, re-saving it), so a no-op write never takes the trust
   * an email had away.
   */
  private emailAuthorship(patches: readonly UserPatch[], changed: ReadonlySet<string>): EmailAuthorship {
    const authorship = authorshipOf(this.principal);
    const ids = patches.filter((patch) => typeof patch.email === 'string' && (changed.has(patch.id) || trustedFor(authorship, patch.id))).map((patch) => patch.id);
    return { ids: new Set(ids), authorship };
  }

  /**
   * Suspends or reactivates the given (locked, checked) users inside the caller's transaction. A
   * suspension runs every feature's hook, which revokes what that feature issued to the user.
   */
  private async changeSuspensions(em: EntityManager, patches: readonly UserPatch[]): Promise<void> {
    if (patches.length === 0) return;
    const at = new Date();
    const writes = new UserWrites(em, this.principal.accountId);
    const reactivating = patches.filter((patch) => patch.active === true).map((patch) => patch.id);
    await writes.setSuspended(reactivating, null);
    for (const id of reactivating) {
      recordChange(em, { accountId: this.principal.accountId, action: 'reactivate', resource: { type: 'user', id }, userId: id, fields: [{ name: restName('active'), value: true, beforeValue: false }] });
    }
    const suspending = patches.filter((patch) => patch.active === false).map((patch) => patch.id);
    await writes.setSuspended(suspending, at);
    for (const id of suspending) {
      recordChange(em, { accountId: this.principal.accountId, action: 'suspend', resource: { type: 'user', id }, userId: id, fields: [{ name: restName('active'), value: false, beforeValue: true }], revokesAccess: true });
      for (const hook of this.hooks.suspended ?? []) await hook(em, { id, accountId: this.principal.accountId, suspendedAt: at }, this.principal);
    }
  }

  async delete(id: string): Promise<void> {
    policy.assertCanUpdateUsers(this.principal);
    await this.transactions.run(this.em, async (em) => {
      // The user's row is the first lock, as in every write about a user; the hooks then clean up
      // the user's rows in the features' order (docs/ARCHITECTURE.md, "Concurrent writes").
      if (!(await lockLiveUser(em, this.principal.accountId, id))) throw new NotFoundError('user');
      const user = await em.findOneOrFail(User, { id });
      if (user.role === 'owner') throw new InvalidInputError('The account owner cannot be deleted; transfer ownership first.');
      const deletedAt = new Date();
      user.deletedAt = deletedAt;
      await em.flush();
      recordChange(em, {
        accountId: this.principal.accountId,
        action: 'delete',
        resource: { type: 'user', id: user.id, summary: user.name },
        userId: user.id,
        fields: createdFields(user).map((field) => ({ name: field.name, beforeValue: field.value })),
        revokesAccess: true,
      });
      for (const hook of this.hooks.deleted ?? []) await hook(em, { id: user.id, accountId: this.principal.accountId, deletedAt }, this.principal);
    }, 'users.delete');
  }

  /**
   * Self may edit own profile fields; others, and any role change, need can_update_user. An email is
   * who single sign-on may first link a person by: the owner's is changed only by the owner, an
   * admin's only by that admin or the owner, and any by the account's identity provider (SCIM)
   * through a provisioning token created with owner rights (a token acts no higher than its creator).
   */
  private assertMayChange(user: LockedUser, patch: UserPatch): void {
    if (user.role === 'owner') this.assertIsOwnerOrOwnersIdentityProvider(user);
    if (patch.email !== undefined && normalizeEmail(patch.email ?? '') !== normalizeEmail(user.email)) this.assertMayChangeEmailOf(user);
    if (canUpdateUser(this.principal)) return;
    if (!policy.isSelf(this.principal, user.id)) {
      throw new ForbiddenError('Only the user themself or a holder of can_update_user may change this user.');
    }
    if (patch.role !== undefined && patch.role !== user.role) throw new ForbiddenError('Changing a role requires the can_update_user permission.');
    if (patch.active != null && patch.active !== user.active) throw new ForbiddenError('Suspending or reactivating a user requires the can_update_user permission.');
    if (patch.externalId !== undefined && patch.externalId !== user.externalId) throw new ForbiddenError('Changing externalId requires the can_update_user permission.');
    policy.assertCanWrite(this.principal);
  }

  /** The owner is changed only by the owner (or the identity provider through a token the owner created): nobody works on the top of the privilege order from below. */
  private assertIsOwnerOrOwnersIdentityProvider(owner: LockedUser): void {
    if (this.principal.kind === 'provisioning_token' && this.principal.ownerRights) return;
    if (isUserPrincipal(this.principal) && this.principal.userId === owner.id) return;
    throw new ForbiddenError('Only the account owner may change the owner.');
  }

  /** An admin's email: changed by that admin, the owner, or a provisioning token created with owner rights. The owner's own is held by assertIsOwnerOrOwnersIdentityProvider, which runs first. */
  private assertMayChangeEmailOf(user: LockedUser): void {
    if (user.role !== 'admin') return;
    if (this.principal.kind === 'provisioning_token') {
      if (this.principal.ownerRights) return;
      throw new ForbiddenError('This provisioning token was not created by the account owner: it may not change an admin\'s email. The owner creates one that may.');
    }
    const actor = isUserPrincipal(this.principal) ? this.principal : undefined;
    if (actor && (actor.userId === user.id || actor.role === 'owner')) return;
    throw new ForbiddenError('Only the admin themself or the account owner may change an admin\'s email.');
  }
}

function createdFields(user: User) {
  return userChangedFields({ name: user.name, email: user.email, timeZone: user.timeZone, color: user.color, role: user.role, description: user.description, jobTitle: user.jobTitle });
}

/** The first user of a new account; only bootstrap creates owners. */
export async function createAccountOwner(em: EntityManager, account: Account, fields: { name: string; email: string }): Promise<User> {
  const problems = validateUserFields(fields, { creating: true });
  if (problems.length) throw new InvalidInputError(problems);
  // Bootstrap is the operator's (the CLI, or the server's first start): the owner's email is set with owner rights.
  const owner = em.create(User, { account, name: fields.name.trim(), email: fields.email.trim(), timeZone: account.timeZone, color: 'green', role: 'owner', emailSetWithOwnerRights: true });
  await em.persist(owner).flush();
  recordChange(em, { accountId: account.id, action: 'create', resource: { type: 'user', id: owner.id, summary: owner.name }, userId: owner.id, fields: createdFields(owner) });
  return owner;
}

/** A taken email at its element's `email`, in the duplicate check's words. */
function emailTakenAt(base: (string | number)[], label = ''): FieldProblem {
  return { path: [...base, 'email'], code: 'DUPLICATE', message: `${label}${EMAIL_TAKEN}` };
}

function inputFieldProblem(base: (string | number)[], problem: UserFieldProblem, label = ''): FieldProblem {
  return { path: [...base, problem.field], code: problem.code, message: `${label}${problem.field} ${problem.detail}` };
}
