/** Stops the server the global set-up started, and removes its data directory. */
export default async function globalTeardown(): Promise<void> {
  await globalThis.aagTestServer?.stop();
  globalThis.aagTestServer = undefined;
}
