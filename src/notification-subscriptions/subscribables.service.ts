import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/sql';
import { AccountsService } from '../accounts/accounts.service.js';
import { InvalidInputError } from '../errors/domain-errors.js';
import { MAX_SUBSCRIBABLE_FIELD_LENGTH, SUBSCRIBABLE_TYPES, isSubscribableType, type SubscribableType } from './subscribable.entity.js';

export interface RegisteredSubscribable {
  /** The public id the operator gave. */
  id: string;
  type: SubscribableType;
  name: string;
  accountId: string;
}

/** A few entities `accessctl seed` registers, so a seeded account has something to subscribe to. */
export const DEMO_SUBSCRIBABLES: readonly { type: SubscribableType; id: string; name: string }[] = [
  { type: 'incident', id: 'PINC001', name: 'Checkout latency above SLO' },
  { type: 'incident', id: 'PINC002', name: 'Database failover in eu-west-1' },
  { type: 'incident', id: 'PINC003', name: 'Login errors after deploy' },
  { type: 'business_service', id: 'PBIZ001', name: 'Payments' },
  { type: 'business_service', id: 'PBIZ002', name: 'Customer Portal' },
];

/** The operator's side of the registry of subscribable entities (the CLI feeds it). */
export class SubscribablesService {
  constructor(private readonly em: EntityManager) {}

  /** Registers an entity, or renames it when (account, type, id) is already registered. */
  async add(input: { accountId: string; type: string; id: string; name: string }): Promise<RegisteredSubscribable> {
    const problems: string[] = [];
    if (!isSubscribableType(input.type)) problems.push(`type must be one of ${SUBSCRIBABLE_TYPES.join(', ')}`);
    const id = input.id.trim();
    const name = input.name.trim();
    if (!id) problems.push('id must not be empty');
    if (id.length > MAX_SUBSCRIBABLE_FIELD_LENGTH) problems.push(`id must be at most ${MAX_SUBSCRIBABLE_FIELD_LENGTH} characters`);
    if (!name) problems.push('name must not be empty');
    if (name.length > MAX_SUBSCRIBABLE_FIELD_LENGTH) problems.push(`name must be at most ${MAX_SUBSCRIBABLE_FIELD_LENGTH} characters`);
    if (problems.length) throw new InvalidInputError(problems);
    const account = await new AccountsService(this.em).getAccount(input.accountId);
    const [row] = await this.em.execute<{ public_id: string; type: SubscribableType; name: string }[]>(
      `insert into subscribables (id, account_id, type, public_id, name) values (?, ?, ?, ?, ?)
       on conflict (account_id, type, public_id) do update set name = excluded.name, updated_at = now()
       returning public_id, type, name`,
      [randomUUID(), account.id, input.type, id, name],
    );
    return { id: row!.public_id, type: row!.type, name: row!.name, accountId: account.id };
  }

  async addDemoEntities(accountId: string): Promise<RegisteredSubscribable[]> {
    const added: RegisteredSubscribable[] = [];
    for (const entity of DEMO_SUBSCRIBABLES) added.push(await this.add({ accountId, ...entity }));
    return added;
  }
}
