import { describe, expect, it } from 'vitest';
import { InvalidCronExpressionError, parseCron } from './cron.ts';

const at = (iso: string) => Date.parse(iso);
const next = (expression: string, after: string) => new Date(parseCron(expression).next(at(after))).toISOString();

describe('parseCron', () => {
  it('finds the next UTC minute strictly after the given time', () => {
    expect(next('* * * * *', '2026-07-17T10:00:00.000Z')).toBe('2026-07-17T10:01:00.000Z');
    expect(next('* * * * *', '2026-07-17T10:00:30.000Z')).toBe('2026-07-17T10:01:00.000Z');
    expect(next('0 9 * * *', '2026-07-17T09:00:00.000Z')).toBe('2026-07-18T09:00:00.000Z');
    expect(next('0 9 * * *', '2026-07-17T08:59:59.999Z')).toBe('2026-07-17T09:00:00.000Z');
    expect(next('*/15 * * * *', '2026-07-17T10:16:00.000Z')).toBe('2026-07-17T10:30:00.000Z');
    expect(next('5/20 * * * *', '2026-07-17T10:26:00.000Z')).toBe('2026-07-17T10:45:00.000Z');
    expect(next('0 0 1 1 *', '2026-07-17T00:00:00.000Z')).toBe('2027-01-01T00:00:00.000Z');
  });

  it('reads ranges, lists, steps and month and weekday names; 7 is Sunday', () => {
    // 2026-07-17 is a Friday.
    expect(next('30 8 * * MON-FRI', '2026-07-17T09:00:00.000Z')).toBe('2026-07-20T08:30:00.000Z');
    expect(next('0 12 * * 0', '2026-07-17T00:00:00.000Z')).toBe('2026-07-19T12:00:00.000Z');
    expect(next('0 12 * * 7', '2026-07-17T00:00:00.000Z')).toBe('2026-07-19T12:00:00.000Z');
    expect(next('0 0 1 jan,jul *', '2026-07-02T00:00:00.000Z')).toBe('2027-01-01T00:00:00.000Z');
    expect(next('0 6-18/6 * * *', '2026-07-17T12:00:00.000Z')).toBe('2026-07-17T18:00:00.000Z');
    expect(next('0 0 29 2 *', '2026-03-01T00:00:00.000Z')).toBe('2028-02-29T00:00:00.000Z');
  });

  it('fires on either day field when both are restricted, as classic cron does', () => {
    // The 20th (a Monday) comes after Sunday the 19th.
    expect(next('0 0 20 * SUN', '2026-07-17T00:00:00.000Z')).toBe('2026-07-19T00:00:00.000Z');
    expect(next('0 0 18 * MON', '2026-07-17T00:00:00.000Z')).toBe('2026-07-18T00:00:00.000Z');
  });

  it('rejects malformed expressions with a typed error naming the field', () => {
    const cases: [string, string][] = [
      ['* * * *', 'found 4 fields'],
      ['60 * * * *', 'the minute field "60" is not valid (values run from 0 to 59)'],
      ['* 10-2 * * *', 'the hour field "10-2" is not valid (a range must go from low to high)'],
      ['* * * * L', 'the day-of-week field "L" is not valid'],
      ['*/0 * * * *', 'the minute field "*/0" is not valid'],
      ['0 0 31 2 *', 'the day-of-month never occurs in the given months'],
    ];
    for (const [expression, problem] of cases) {
      let caught: unknown;
      try {
        parseCron(expression);
      } catch (error) {
        caught = error;
      }
      expect(caught, expression).toBeInstanceOf(InvalidCronExpressionError);
      expect((caught as InvalidCronExpressionError).code).toBe('invalid_cron_expression');
      expect((caught as Error).message).toContain(`[flue] Invalid cron expression "${expression}": ${problem}`);
    }
  });
});
