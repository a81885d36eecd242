import { Field, Int, ObjectType, type ClassType } from 'type-graphql';

@ObjectType({ description: 'Relay page information.' })
export class PageInfo {
  @Field()
  hasNextPage!: boolean;

  @Field()
  hasPreviousPage!: boolean;

  @Field(() => String, { nullable: true })
  startCursor!: string | null;

  @Field(() => String, { nullable: true })
  endCursor!: string | null;
}

export interface Page<T> {
  items: T[];
  hasNextPage: boolean;
  hasPreviousPage: boolean;
  cursorOf(item: T): string;
  /** Runs only when a client selects `totalCount`. */
  countTotal(): Promise<number>;
}

export interface ConnectionShape<T> {
  edges: { cursor: string; node: T }[];
  nodes: T[];
  pageInfo: PageInfo;
  totalCount: Promise<number>;
}

/** Builds `<Name>Connection` and `<Name>Edge` object types around a node type. */
export function connectionType<T>(name: string, nodeType: () => ClassType): ClassType<ConnectionShape<T>> & { from(page: Page<T>): ConnectionShape<T> } {
  @ObjectType(`${name}Edge`)
  class Edge {
    @Field(() => String)
    cursor!: string;

    @Field(nodeType)
    node!: T;
  }

  @ObjectType(`${name}Connection`, { description: `A page of ${name} nodes (Relay cursor connection).` })
  class Connection implements ConnectionShape<T> {
    private page!: Page<T>;

    static from(page: Page<T>): Connection {
      const connection = new Connection();
      connection.page = page;
      return connection;
    }

    @Field(() => [Edge])
    get edges(): { cursor: string; node: T }[] {
      return this.page.items.map((node) => ({ cursor: this.page.cursorOf(node), node }));
    }

    @Field(() => [nodeType()])
    get nodes(): T[] {
      return this.page.items;
    }

    @Field(() => PageInfo)
    get pageInfo(): PageInfo {
      const { items, cursorOf } = this.page;
      return {
        hasNextPage: this.page.hasNextPage,
        hasPreviousPage: this.page.hasPreviousPage,
        startCursor: items.length ? cursorOf(items[0]!) : null,
        endCursor: items.length ? cursorOf(items[items.length - 1]!) : null,
      };
    }

    @Field(() => Int, { description: 'All nodes matching the arguments, across pages.' })
    get totalCount(): Promise<number> {
      return this.page.countTotal();
    }
  }

  return Connection;
}
