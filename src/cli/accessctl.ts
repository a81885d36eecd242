#!/usr/bin/env node
import 'reflect-metadata';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config/config.js';
import { openDatabase } from '../db/database.js';
import { EmbeddedDatabaseBusyError } from '../db/embedded-lock.js';
import { DomainError } from '../errors/domain-errors.js';
import { allCommitHooks, allEntities } from '../app/features.js';
import { UsageError } from './command.js';
import { commands, operatorRowOf } from './command-list.js';
import { resolveServerSecret } from '../auth/server-secret.js';
import { configureAuditChainKey } from '../audit/audit-chain.js';
import { userInfo } from 'node:os';


function usage(): string {
  return `Usage:\n${commands.map((command) => `  ${command.usage}`).join('\n')}\n\nReads DATABASE_URL (DATABASE_OWNER_URL for migrations) and DATA_DIR like the server; writes name ACCESSCTL_OPERATOR (else the OS user). With --json, stdout holds exactly one JSON object.`;
}

/** Who runs the command, for the audit trail's `method.description`: ACCESSCTL_OPERATOR, else the OS user. */
function operatorName(): string {
  const named = process.env.ACCESSCTL_OPERATOR?.trim();
  if (named) return named;
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}

async function main(argv: string[]): Promise<number> {
  const command = commands
    .filter((candidate) => candidate.name.split(' ').every((word, index) => argv[index] === word))
    .sort((a, b) => b.name.length - a.name.length)[0];
  if (!command) {
    process.stderr.write(`${argv.length ? `Unknown command: ${argv.join(' ')}\n\n` : ''}${usage()}\n`);
    return argv.length && !['help', '--help', '-h'].includes(argv[0]!) ? 2 : 0;
  }
  // A command without a row in the access table is not run.
  operatorRowOf(command);
  const rest = argv.slice(command.name.split(' ').length);
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({ args: rest, options: { ...command.options, json: { type: 'boolean' } }, strict: true }).values as typeof values;
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\nUsage: ${command.usage}\n`);
    return 2;
  }

  const config = loadConfig();
  configureAuditChainKey(config.auditChainKey ? Buffer.from(config.auditChainKey, 'utf8') : resolveServerSecret(config));
  const database = await openDatabase({ databaseUrl: command.asOwner ? (config.databaseOwnerUrl ?? config.databaseUrl) : config.databaseUrl, ownerUrl: config.databaseOwnerUrl, pooler: config.databasePooler, preparedStatements: config.databasePreparedStatements, lockTimeoutMs: config.databaseLockTimeoutMs, statementTimeoutMs: config.databaseStatementTimeoutMs, dataDir: config.dataDir, entities: allEntities(), commitHooks: allCommitHooks(), embeddedAccess: 'join' });
  try {
    const applied = await database.migrate();
    if (applied.length) process.stderr.write(`applied migrations: ${applied.join(', ')}\n`);
    // An operator's writes are attributed to the command that made them (the audit trail's `other` method).
    const operator = { ...database, transactions: database.transactions.onBehalfOf({ face: 'cli', description: `accessctl ${command.name} (operator: ${operatorName()})` }) };
    const result = await command.run(operator, values, {
      info: (message) => process.stderr.write(`${message}\n`),
      serverSecret: () => resolveServerSecret(config),
      apiUrl: () => config.publicApiUrl,
      readStdin: async () => {
        const chunks: Buffer[] = [];
        for await (const chunk of process.stdin) chunks.push(Buffer.from(chunk as Buffer));
        return Buffer.concat(chunks).toString('utf8');
      },
      write: (text) => new Promise<void>((resolve) => {
        if (process.stdout.write(text)) resolve();
        else process.stdout.once('drain', resolve);
      }),
    });
    const output = values.json ? `${JSON.stringify(result)}\n` : `${command.human(result)}\n`;
    (command.streamsStdout ? process.stderr : process.stdout).write(output);
    return command.exitCode?.(result) ?? 0;
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`${error.message}\nUsage: ${command.usage}\n`);
      return 2;
    }
    if (error instanceof DomainError) {
      process.stderr.write(`${error.message}: ${error.details.join('; ')}\n`);
      return 1;
    }
    throw error;
  } finally {
    await database.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof ConfigError || error instanceof EmbeddedDatabaseBusyError) process.stderr.write(`${error.message}\n`);
    else process.stderr.write(`accessctl failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
    process.exit(1);
  },
);
