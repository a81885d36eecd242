/**
 * Where the API is and which registered `spa` app this is. Read at start from the app's own origin,
 * so one build runs against any deployment.
 */
export interface AppConfig {
  /** The API's origin, e.g. https://api.example.com; also the OAuth issuer. */
  apiUrl: string;
  /** The `spa` app's client id (a public client: no secret). */
  clientId: string;
}

export async function loadConfig(): Promise<AppConfig> {
  const response = await fetch('/config.json');
  if (!response.ok) throw new Error(`config.json: HTTP ${response.status}`);
  return (await response.json()) as AppConfig;
}
