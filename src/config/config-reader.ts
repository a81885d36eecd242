export type Env = Record<string, string | undefined>;

/**
 * Reads environment variables for `loadConfig`. A bad value is a problem, collected with the
 * others (so a bad deployment lists every problem, not the first), and the setting falls back to
 * its default meanwhile.
 */
export interface ConfigReader {
  readonly problems: string[];
  /** The variable's value, trimmed; undefined when unset or blank. */
  read(name: string): string | undefined;
  integer(name: string, fallback: number, min: number, max: number): number;
  /** The URL without trailing slashes. */
  url(name: string, fallback: string, protocols: string[]): string;
  boolean(name: string, fallback: boolean): boolean;
  /** One of `values`: `unset` when the variable is unset, `invalid` when it is none of them. */
  oneOf<T extends string>(name: string, values: readonly T[], unset: string, invalid: T): T;
  /** A comma-separated list, entries trimmed, empty entries dropped. */
  list(name: string): string[];
}

export function configReader(env: Env): ConfigReader {
  const problems: string[] = [];
  const read = (name: string) => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  return {
    problems,
    read,
    integer(name, fallback, min, max) {
      const raw = read(name);
      if (raw === undefined) return fallback;
      const value = Number(raw);
      if (!/^\d+$/.test(raw) || value < min || value > max) {
        problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
        return fallback;
      }
      return value;
    },
    url(name, fallback, protocols) {
      const raw = read(name) ?? fallback;
      try {
        const parsed = new URL(raw);
        if (!protocols.includes(parsed.protocol)) throw new Error('protocol');
        return raw.replace(/\/+$/, '');
      } catch {
        problems.push(`${name} must be a ${protocols.join(' or ')} URL (got "${raw}")`);
        return fallback;
      }
    },
    boolean(name, fallback) {
      const raw = read(name);
      if (raw === undefined) return fallback;
      if (['true', '1', 'yes'].includes(raw.toLowerCase())) return true;
      if (['false', '0', 'no'].includes(raw.toLowerCase())) return false;
      problems.push(`${name} must be true or false (got "${raw}")`);
      return fallback;
    },
    oneOf(name, values, unset, invalid) {
      const raw = read(name) ?? unset;
      if ((values as readonly string[]).includes(raw)) return raw as (typeof values)[number];
      problems.push(`${name} must be one of ${values.join(', ')} (got "${raw}")`);
      return invalid;
    },
    list(name) {
      return (read(name) ?? '').split(',').map((entry) => entry.trim()).filter(Boolean);
    },
  };
}
