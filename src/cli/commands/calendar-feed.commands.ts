import { OnCallShiftsService } from '../../calendar-feed/oncall-shifts.service.js';
import { requireOption, UsageError, type CliCommand } from '../command.js';

function dateOption(values: Record<string, string | boolean | undefined>, name: string): Date {
  const raw = requireOption(values, name);
  const date = new Date(raw);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(raw) || Number.isNaN(date.getTime())) throw new UsageError(`--${name} must be an ISO 8601 date-time such as 2026-11-23T09:00:00Z`);
  return date;
}

/** Adds one on-call shift (shown in the user's iCal feed). */
export const addShiftCommand: CliCommand = {
  name: 'shifts add',
  usage: 'accessctl shifts add --user ID --start ISO8601 --end ISO8601 --summary TEXT [--json]',
  options: { user: { type: 'string' }, start: { type: 'string' }, end: { type: 'string' }, summary: { type: 'string' } },
  async run(database, values) {
    const fields = {
      userId: requireOption(values, 'user'),
      startsAt: dateOption(values, 'start'),
      endsAt: dateOption(values, 'end'),
      summary: requireOption(values, 'summary'),
    };
    const shift = await database.transactions.run(database.em(), (tx) => new OnCallShiftsService(tx).add(fields), 'calendarFeed.addShift');
    return { id: shift.id, user_id: shift.userId, start: shift.startsAt.toISOString(), end: shift.endsAt.toISOString(), summary: shift.summary };
  },
  human: (result) => `Shift ${String(result.id)} for ${String(result.user_id)}: ${String(result.start)} to ${String(result.end)} (${String(result.summary)}).`,
};
