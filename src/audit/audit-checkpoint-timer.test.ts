import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { startHarness, type Harness, type TestAccount } from '../../test/support/harness.js';
import { verifyAuditCommand } from '../cli/commands/audit.commands.js';

/** The server logs one signed checkpoint per account each hour; here each tick is a few milliseconds. */
const INTERVAL_MS = 40;
const io = { info: () => {} };
let h: Harness;
let dir: string;
let closed = false;

beforeAll(async () => {
  h = await startHarness({ auditCheckpointIntervalMs: INTERVAL_MS });
  dir = await mkdtemp(path.join(tmpdir(), 'audit-checkpoint-timer-'));
});
afterAll(async () => {
  if (!closed) await h.close();
  await rm(dir, { recursive: true, force: true });
});

interface LoggedCheckpoint {
  /** The line as the log holds it: what an operator keeps and hands to `audit verify --checkpoint`. */
  line: string;
  accountId: string;
  position: number;
}

function logLines(): Array<{ line: string; entry: { msg?: string; checkpoint?: { account_id: string; position: number } } }> {
  return h.logs.flatMap((chunk) => chunk.split('\n')).filter((line) => line.trim()).map((line) => ({ line, entry: JSON.parse(line) }));
}

function checkpointsLogged(): LoggedCheckpoint[] {
  return logLines().flatMap(({ line, entry }) => (entry.msg === 'audit checkpoint' && entry.checkpoint ? [{ line, accountId: entry.checkpoint.account_id, position: entry.checkpoint.position }] : []));
}

/** Polls the captured log (never longer than the test's timeout) until `found` holds. */
async function waitForLog(found: (checkpoints: LoggedCheckpoint[]) => boolean): Promise<LoggedCheckpoint[]> {
  for (;;) {
    const checkpoints = checkpointsLogged();
    if (found(checkpoints)) return checkpoints;
    await delay(5);
  }
}

async function headPosition(account: TestAccount): Promise<number> {
  const [head] = await h.database.em().execute<{ position: string | number }[]>('select position from audit_chain_heads where account_id = ?', [account.id]);
  return Number(head!.position);
}

describe('the server\'s audit checkpoint timer', () => {
  test('logs one checkpoint per account each tick, each verifying as `audit verify --checkpoint`, and stops with the server', async () => {
    const first = await h.createAccount();
    const second = await h.createAccount();
    const ofAccount = (checkpoints: LoggedCheckpoint[], account: TestAccount) => checkpoints.filter((checkpoint) => checkpoint.accountId === account.id);

    // A tick that began before the second account existed may log the first alone: count from a tick that saw both.
    const start = (await waitForLog((checkpoints) => ofAccount(checkpoints, second).length > 0)).length;
    const ticks = (await waitForLog((checkpoints) => ofAccount(checkpoints.slice(start), first).length >= 2)).slice(start);
    // A tick logs all its lines at once: whenever the log is read, each account has as many lines as the other.
    expect(ofAccount(ticks, first).length).toBe(ofAccount(ticks, second).length);
    expect(ticks).toHaveLength(2 * ofAccount(ticks, first).length);
    expect(ofAccount(ticks, first).every((checkpoint) => checkpoint.position === ofAccount(ticks, first)[0]!.position)).toBe(true);

    // Each tick signs the head as it is then.
    expect((await h.rest('post', '/users', { key: first.key, body: { user: { type: 'user', name: 'After A Tick', email: 'after-a-tick@example.com' } } })).status).toBe(201);
    const moved = await headPosition(first);
    expect(moved).toBeGreaterThan(ticks[0]!.position);
    const latest = await waitForLog((checkpoints) => checkpoints.some((checkpoint) => checkpoint.accountId === first.id && checkpoint.position === moved));

    for (const account of [first, second]) {
      const logged = ofAccount(latest, account).at(-1)!;
      expect(logged.position).toBe(await headPosition(account));
      const file = path.join(dir, `${account.id}.log`);
      await writeFile(file, `${logged.line}\n`);
      const outcome = await verifyAuditCommand.run(h.database, { account: account.id, checkpoint: file }, io);
      expect(outcome).toMatchObject({ ok: true, checkpoint: { position: logged.position } });
      expect(verifyAuditCommand.exitCode!(outcome)).toBe(0);
    }

    // Shutdown stops the timer (a round under way ends before the database closes): no line after it, nor a failed round against the closed database.
    await h.close();
    closed = true;
    const atStop = logLines().length;
    await delay(5 * INTERVAL_MS);
    expect(logLines().slice(atStop)).toEqual([]);
    expect(logLines().filter(({ entry }) => entry.msg === 'audit checkpoints not logged')).toEqual([]);
  });
});
