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

/** One entry of the registry as a picker shows it. */
export interface SubscribableEntry {
  /** Internal key: unique across types, what a client cache keys it by. */
  key: string;
  publicId: string;
  type: SubscribableType;
  name: string;
}

export interface SubscribablePageRequest {
  first: number;
  type?: SubscribableType;
  /** A case-insensitive substring of the name or the public id. */
  query?: string;
  /** The last entry of the previous page, in the name order. */
  after?: { name: string; type: string; publicId: string };
}

/** `%`, `_` and `\` match themselves in a user's search text. */
function likePattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (char) => `\\${char}`)}%`;
}

/** The operator's side of the registry of subscribable entities (the CLI feeds it), and the picker's read. */
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

  /**
   * A page of the account's registry in name order (then type and id), optionally of one type
   * and matching `query` in the name or the id, whatever the case. One statement per page (the
   * registry is an account's incidents and services: walked through the account's rows).
   */
  async page(accountId: string, request: SubscribablePageRequest): Promise<{ items: SubscribableEntry[]; hasNextPage: boolean; countTotal(): Promise<number> }> {
    const conditions = ['account_id = ?'];
    const params: unknown[] = [accountId];
    if (request.type) {
      conditions.push('type = ?');
      params.push(request.type);
    }
    if (request.query) {
      conditions.push("(name ilike ? escape '\\' or public_id ilike ? escape '\\')");
      params.push(likePattern(request.query), likePattern(request.query));
    }
    const filtered = [...conditions];
    const filterParams = [...params];
    if (request.after) {
      conditions.push('(name, type, public_id) > (?, ?, ?)');
      params.push(request.after.name, request.after.type, request.after.publicId);
    }
    const rows = await this.em.execute<Array<{ id: string; public_id: string; type: SubscribableType; name: string }>>(
      `select id, public_id, type, name from subscribables where ${conditions.join(' and ')} order by name, type, public_id limit ?`,
      [...params, request.first + 1],
    );
    return {
      items: rows.slice(0, request.first).map((row) => ({ key: row.id, publicId: row.public_id, type: row.type, name: row.name })),
      hasNextPage: rows.length > request.first,
      countTotal: async () => {
        const [row] = await this.em.execute<{ count: string }[]>(`select count(*) as count from subscribables where ${filtered.join(' and ')}`, filterParams);
        return Number(row!.count);
      },
    };
  }

  async addDemoEntities(accountId: string): Promise<RegisteredSubscribable[]> {
    const added: RegisteredSubscribable[] = [];
    for (const entity of DEMO_SUBSCRIBABLES) added.push(await this.add({ accountId, ...entity }));
    return added;
  }
}
