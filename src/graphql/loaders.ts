/**
 * Per-request data loaders, created on first use so each feature registers its own
 * without the context knowing about it.
 */
export class LoaderRegistry {
  private readonly loaders = new Map<string, unknown>();

  get<T>(name: string, create: () => T): T {
    let loader = this.loaders.get(name) as T | undefined;
    if (loader === undefined) {
      loader = create();
      this.loaders.set(name, loader);
    }
    return loader;
  }
}
