import { Field, Int, ObjectType, type ClassType } from 'type-graphql';
import { InvalidInputError } from '../errors/domain-errors.js';

// Plain values (cursors are lazy getters): read straight from the source, no per-field resolver.
@ObjectType({ description: 'Relay page information.', simpleResolvers: true })
export class PageInfo {
  @Field({ description: 'Whether more nodes follow this page (ask again with `after: endCursor`).' })
  hasNextPage!: boolean;

  @Field({ description: 'Whether nodes precede this page.' })
  hasPreviousPage!: boolean;

  @Field(() => String, { nullable: true, description: 'The cursor of the first node of this page; null when the page is empty.' })
  startCursor!: string | null;

  @Field(() => String, { nullable: true, description: 'The cursor of the last node of this page; null when the page is empty.' })
  endCursor!: string | null;
}

export interface Page<T> {
  items: T[];
  hasNextPage: boolean;
  hasPreviousPage: boolean;
  cursorOf(item: T): string;
  /** Runs only when a client selects `totalCount` (absent for connections built without it). */
  countTotal?(): Promise<number>;
}

/**
 * A page whose rows load only when a client selects `edges`, `nodes` or `pageInfo`: asking a
 * connection for `totalCount` alone then costs the count and no rows.
 */
export interface DeferredPage<T> {
  slice(): Promise<{ items: T[]; hasNextPage: boolean }>;
  hasPreviousPage: boolean;
  cursorOf(item: T): string;
  countTotal?(): Promise<number>;
}

export interface ConnectionShape<T> {
  edges: Promise<{ cursor: string; node: T }[]>;
  nodes: Promise<T[]>;
  pageInfo: Promise<PageInfo>;
}

export interface ConnectionOptions {
  /**
   * False for lists with no count worth its cost (an unbounded, growing set): the connection then
   * has no `totalCount` field at all, rather than one that always errors.
   */
  totalCount?: boolean;
}

/** Builds `<Name>Connection` and `<Name>Edge` object types around a node type. */
export function connectionType<T>(
  name: string,
  nodeType: () => ClassType,
  options: ConnectionOptions = {},
): ClassType<ConnectionShape<T>> & { from(page: Page<T>): ConnectionShape<T>; deferred(page: DeferredPage<T>): ConnectionShape<T> } {
  @ObjectType(`${name}Edge`, { description: `One ${name} of a page, with its cursor.` })
  class Edge {
    @Field(() => String, { description: 'Where this node is in the list: an `after` argument continues after it.' })
    cursor!: string;

    @Field(nodeType, { description: 'The node.' })
    node!: T;
  }

  @ObjectType(`${name}Connection`, { description: `A page of ${name} nodes (Relay cursor connection).` })
  class Connection implements ConnectionShape<T> {
    protected page!: DeferredPage<T>;
    private loaded?: Promise<{ items: T[]; hasNextPage: boolean }>;

    static from(page: Page<T>): Connection {
      const { items, hasNextPage } = page;
      return Connection.deferred({ ...page, slice: () => Promise.resolve({ items, hasNextPage }) });
    }

    static deferred(page: DeferredPage<T>): Connection {
      const connection = new this();
      connection.page = page;
      return connection;
    }

    private slice(): Promise<{ items: T[]; hasNextPage: boolean }> {
      this.loaded ??= this.page.slice();
      return this.loaded;
    }

    // Cursors are signed (an HMAC each), so they are computed only when a document selects them.
    @Field(() => [Edge], { description: 'The nodes of this page with their cursors.' })
    get edges(): Promise<{ cursor: string; node: T }[]> {
      const { cursorOf } = this.page;
      return this.slice().then(({ items }) => items.map((node) => ({ get cursor() { return cursorOf(node); }, node })));
    }

    @Field(() => [nodeType()], { description: 'The nodes of this page, in list order.' })
    get nodes(): Promise<T[]> {
      return this.slice().then(({ items }) => items);
    }

    @Field(() => PageInfo, { description: 'Where this page is in the list.' })
    get pageInfo(): Promise<PageInfo> {
      const { cursorOf, hasPreviousPage } = this.page;
      return this.slice().then(({ items, hasNextPage }) => ({
        hasNextPage,
        hasPreviousPage,
        get startCursor() { return items.length ? cursorOf(items[0]!) : null; },
        get endCursor() { return items.length ? cursorOf(items[items.length - 1]!) : null; },
      }));
    }

    get totalCount(): Promise<number> {
      return this.page.countTotal!();
    }
  }

  // Declared as a field only where the list offers a count (a field that always errors is worse than none).
  if (options.totalCount !== false) {
    Field(() => Int, { description: 'All nodes matching the arguments, across pages.' })(Connection.prototype, 'totalCount');
  }

  return Connection;
}

/** Offset paging reaches no further than this (the v2 API's window). */
export const MAX_OFFSET_WINDOW = 10_000;

/**
 * The page arguments connections accept: `first` from 1 to `maxFirst`, and either `after` or
 * `offset` (offset + first within the window). Returns the offset to use.
 */
export function checkPageArgs(args: { first: number; offset?: number | null; after?: string | null }, maxFirst: number): number {
  if (!Number.isInteger(args.first) || args.first < 1 || args.first > maxFirst) throw new InvalidInputError(`first must be from 1 to ${maxFirst}`);
  const offset = args.offset ?? 0;
  if (offset < 0 || offset + args.first > MAX_OFFSET_WINDOW) throw new InvalidInputError(`offset must be at least 0 and offset + first at most ${MAX_OFFSET_WINDOW}`);
  if (args.after && args.offset) throw new InvalidInputError('give either after or offset, not both');
  return offset;
}
