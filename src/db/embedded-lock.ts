import fs from 'node:fs';
import path from 'node:path';

export class EmbeddedDatabaseBusyError extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
    why = 'and serves it to no other process (a second server cannot share it; the CLI uses the running server\'s socket in socket/, absent here)',
  ) {
    super(
      `The embedded database in ${dataDir} is in use by another process (pid ${pid}), ${why}.\n` +
        'Either stop that process and run this again, or point both at a PostgreSQL server with DATABASE_URL=postgres://...',
    );
    this.name = 'EmbeddedDatabaseBusyError';
  }
}

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes the data directory for this process. A second process (the CLI while the server
 * runs, or a second server) fails at once with a clear message instead of opening the same
 * PGlite files and corrupting them; a lock left by a crashed process is taken over.
 */
export function acquireEmbeddedLock(dataDir: string): () => void {
  fs.mkdirSync(dataDir, { recursive: true });
  const lockPath = path.join(dataDir, 'embedded.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(lockPath, String(process.pid), { flag: 'wx' });
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        try {
          if (fs.readFileSync(lockPath, 'utf8') === String(process.pid)) fs.unlinkSync(lockPath);
        } catch {
          /* already gone */
        }
      };
      process.once('exit', release);
      return release;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number(fs.readFileSync(lockPath, 'utf8'));
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && processIsAlive(holder)) {
        throw new EmbeddedDatabaseBusyError(dataDir, holder);
      }
      fs.unlinkSync(lockPath);
    }
  }
  throw new Error(`Could not take the embedded database lock in ${dataDir}`);
}
