import type { parseArgs } from 'node:util';
import type { Database } from '../db/database.js';

type ParseArgsOptions = NonNullable<Parameters<typeof parseArgs>[0]>['options'];

export interface CommandIo {
  /** Human-readable progress; stderr, so `--json` output stays one object on stdout. */
  info(message: string): void;
  /** The server secret (SECRET_KEY, or the data directory's), for commands that seal or unseal. */
  serverSecret?(): Buffer;
  /** Standard input, read to its end (a password is never an argument: it would show in `ps`). */
  readStdin?(): Promise<string>;
  /** The public API URL the server answers at (PUBLIC_API_URL), for URLs an operator pastes elsewhere. */
  apiUrl?(): string;
  /** Standard output for a command that streams its result (an export); resolves once the text is taken (backpressure). */
  write?(text: string): Promise<void>;
}

export interface CliCommand {
  /** e.g. `api-keys create` */
  name: string;
  usage: string;
  options: ParseArgsOptions;
  /** Returns the result object: printed as JSON with --json, else as `human(result)`. */
  run(database: Database, values: Record<string, string | boolean | undefined>, io: CommandIo): Promise<Record<string, unknown>>;
  human(result: Record<string, unknown>): string;
  /** The process's exit status for a result (default 0): a check that found a problem says so. */
  exitCode?(result: Record<string, unknown>): number;
  /** The command writes its own output on stdout (`io.write`); its result goes to stderr. */
  streamsStdout?: boolean;
  /** The command changes privileges: it connects as the schema's owner (DATABASE_OWNER_URL, else DATABASE_URL). */
  asOwner?: boolean;
}

export class UsageError extends Error {}

export function requireOption(values: Record<string, string | boolean | undefined>, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${name} is required`);
  return value.trim();
}

export function positiveInteger(values: Record<string, string | boolean | undefined>, name: string, fallback: number): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  if (typeof raw !== 'string' || !/^\d+$/.test(raw) || Number(raw) < 1) throw new UsageError(`--${name} must be a positive integer`);
  return Number(raw);
}
