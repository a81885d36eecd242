/**
 * An async stream fed by pushes, with a bounded backlog: graphql-ws pulls one value at a time and
 * sends it, so values wait here only while an event is being presented. When the backlog is full,
 * `overflow` decides what replaces it (a `resync` marker), so memory per subscription stays bounded.
 */
export class EventStream<T> implements AsyncIterableIterator<T> {
  private readonly backlog: T[] = [];
  private waiting: ((result: IteratorResult<T>) => void) | undefined;
  private ended = false;
  private readonly pulledListeners = new Set<() => void>();

  constructor(
    private readonly maxBacklog: number,
    private readonly overflow: (dropped: number) => T,
    private readonly onEnd: () => void = () => {},
  ) {}

  /** Values pushed and not yet taken. */
  get pending(): number {
    return this.backlog.length;
  }

  push(value: T): void {
    if (this.ended) return;
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = undefined;
      resolve({ value, done: false });
      return;
    }
    if (this.backlog.length >= this.maxBacklog) {
      const dropped = this.backlog.length + 1;
      this.backlog.length = 0;
      this.backlog.push(this.overflow(dropped));
      return;
    }
    this.backlog.push(value);
  }

  /** Resolves once the consumer has asked for the value after everything pushed so far (it has sent them), or the stream ended. */
  whenDelivered(): Promise<void> {
    if (this.ended || (this.backlog.length === 0 && this.waiting)) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (this.ended || (this.backlog.length === 0 && this.waiting)) {
          this.pulledListeners.delete(check);
          resolve();
        }
      };
      this.pulledListeners.add(check);
    });
  }

  next(): Promise<IteratorResult<T>> {
    if (this.backlog.length) {
      const value = this.backlog.shift()!;
      return Promise.resolve({ value, done: false });
    }
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    const pending = new Promise<IteratorResult<T>>((resolve) => {
      this.waiting = resolve;
    });
    for (const listener of [...this.pulledListeners]) listener();
    return pending;
  }

  return(): Promise<IteratorResult<T>> {
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  throw(error: unknown): Promise<IteratorResult<T>> {
    this.end();
    return Promise.reject(error);
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.backlog.length = 0;
    this.waiting?.({ value: undefined, done: true });
    this.waiting = undefined;
    for (const listener of [...this.pulledListeners]) listener();
    this.onEnd();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
