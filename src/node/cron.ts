/**
 * Cron expressions for the built Node server's schedules (`src/schedules.ts`). Five fields —
 * minute, hour, day of month, month, day of week — evaluated in UTC, as Cloudflare evaluates
 * wrangler `triggers.crons`, so one schedule fires at the same instants on both targets.
 */

import { InvalidCronExpressionError } from './schedule-errors.ts';

export { InvalidCronExpressionError };

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const FIELDS: readonly FieldSpec[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] },
  // 7 is accepted as Sunday, as in most cron dialects.
  { name: 'day-of-week', min: 0, max: 7, names: ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] },
];

export interface CronSchedule {
  readonly expression: string;
  /** The first fire time strictly after `afterMs` (ms since epoch, minute-aligned). */
  next(afterMs: number): number;
}

export function parseCron(expression: string): CronSchedule {
  if (typeof expression !== 'string') throw new InvalidCronExpressionError(String(expression), 'it must be a string');
  const parts = expression.trim().split(/\s+/);
  if (parts.length !== 5) throw new InvalidCronExpressionError(expression, `found ${parts.length} field${parts.length === 1 ? '' : 's'}`);
  const sets = parts.map((part, i) => parseField(expression, part, FIELDS[i]!));
  const [minutes, hours, days, months, weekdays] = sets as [Set<number>, Set<number>, Set<number>, Set<number>, Set<number>];
  if (weekdays.delete(7)) weekdays.add(0);
  // Classic cron: when both day fields are restricted, a day matching either one fires.
  const domAny = parts[2] === '*';
  const dowAny = parts[4] === '*';
  const dayMatches = (date: Date): boolean => {
    const dom = days.has(date.getUTCDate());
    const dow = weekdays.has(date.getUTCDay());
    if (domAny && dowAny) return true;
    if (domAny) return dow;
    if (dowAny) return dom;
    return dom || dow;
  };
  if (![...days].some((d) => [...months].some((m) => d <= DAYS_IN_MONTH[m - 1]!)) && dowAny) {
    throw new InvalidCronExpressionError(expression, 'the day-of-month never occurs in the given months');
  }

  return {
    expression,
    next(afterMs: number): number {
      const date = new Date(Math.floor(afterMs / 60_000) * 60_000 + 60_000);
      // Skipping whole months, days and hours keeps this to a few hundred steps; eight years
      // cover every leap-day combination.
      const limit = date.getTime() + 8 * 366 * 86_400_000;
      while (date.getTime() <= limit) {
        if (!months.has(date.getUTCMonth() + 1)) {
          date.setUTCMonth(date.getUTCMonth() + 1, 1);
          date.setUTCHours(0, 0, 0, 0);
          continue;
        }
        if (!dayMatches(date)) {
          date.setUTCDate(date.getUTCDate() + 1);
          date.setUTCHours(0, 0, 0, 0);
          continue;
        }
        if (!hours.has(date.getUTCHours())) {
          date.setUTCHours(date.getUTCHours() + 1, 0, 0, 0);
          continue;
        }
        if (!minutes.has(date.getUTCMinutes())) {
          date.setUTCMinutes(date.getUTCMinutes() + 1, 0, 0);
          continue;
        }
        return date.getTime();
      }
      throw new InvalidCronExpressionError(expression, 'it never fires');
    },
  };
}

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function parseField(expression: string, text: string, spec: FieldSpec): Set<number> {
  const values = new Set<number>();
  for (const item of text.split(',')) {
    const [range, stepText, extra] = item.split('/');
    if (extra !== undefined || range === undefined || range === '') throw bad(expression, spec, item);
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText) || Number(stepText) === 0) throw bad(expression, spec, item);
      step = Number(stepText);
    }
    let from: number;
    let to: number;
    if (range === '*') {
      from = spec.min;
      to = spec.name === 'day-of-week' ? 6 : spec.max;
    } else {
      const bounds = range.split('-');
      if (bounds.length > 2) throw bad(expression, spec, item);
      from = value(expression, spec, bounds[0]!, item);
      // `5/15` means "from 5 to the end, every 15", as in Vixie cron.
      to = bounds.length === 2 ? value(expression, spec, bounds[1]!, item) : stepText === undefined ? from : spec.max;
      if (to < from) throw bad(expression, spec, item, 'a range must go from low to high');
    }
    for (let v = from; v <= to; v += step) values.add(v);
  }
  return values;
}

function value(expression: string, spec: FieldSpec, text: string, item: string): number {
  const upper = text.toUpperCase();
  const named = spec.names?.indexOf(upper) ?? -1;
  if (named >= 0) return spec.name === 'month' ? named + 1 : named;
  if (!/^\d+$/.test(text)) throw bad(expression, spec, item);
  const n = Number(text);
  if (n < spec.min || n > spec.max) throw bad(expression, spec, item, `values run from ${spec.min} to ${spec.max}`);
  return n;
}

function bad(expression: string, spec: FieldSpec, item: string, why?: string): InvalidCronExpressionError {
  const accepted =
    'numbers, *, ranges (a-b), steps (*/n, a-b/n) and lists (a,b)' + (spec.names === undefined ? '' : ` or names (${spec.names[0]}…)`);
  return new InvalidCronExpressionError(expression, `the ${spec.name} field "${item}" is not valid (${why ?? `use ${accepted}`})`);
}
