import { OPERATOR_COMMANDS } from '../auth/access-table.js';
import type { CliCommand } from './command.js';
import { bootstrapCommand, createApiKeyCommand, migrateCommand } from './commands/accounts.commands.js';
import { seedCommand } from './commands/seed.command.js';
import { addShiftCommand } from './commands/calendar-feed.commands.js';
import { addSubscribableCommand } from './commands/notification-subscriptions.commands.js';
import { createDelegationCommand } from './commands/oauth-delegations.commands.js';
import { oauthServerCommands } from './commands/oauth-server.commands.js';
import { ssoCommands } from './commands/sso.commands.js';
import { provisioningTokenCommands } from './commands/provisioning-tokens.commands.js';
import { apiKeyCommands } from './commands/api-keys.commands.js';
import { auditCommands } from './commands/audit.commands.js';
import { dbCommands } from './commands/db.commands.js';

/** Every operator command; each has its row among the access table's operator commands, or `accessctl` refuses to run it. */
export const commands: CliCommand[] = [migrateCommand, bootstrapCommand, createApiKeyCommand, ...apiKeyCommands, seedCommand, createDelegationCommand, addShiftCommand, addSubscribableCommand, ...oauthServerCommands, ...ssoCommands, ...provisioningTokenCommands, ...auditCommands, ...dbCommands];

/** The command's row: what it may do, in words. */
export function operatorRowOf(command: CliCommand): string {
  const row = OPERATOR_COMMANDS[command.name];
  if (!row) throw new Error(`the command ${command.name} has no row in the access table (src/auth/access-table.ts)`);
  return row;
}
