/**
 * The errors `@flue/runtime/node` exports for the built Node server's schedules, apart from the
 * code that throws them: that code (the server, its cron parser) loads with the first
 * `runFlueServer()`, while an app may test `instanceof` against these at any time.
 */

export class InvalidSchedulesError extends Error {
  readonly code = 'invalid_schedules';

  constructor(message: string) {
    super(`[flue] ${message}`);
    this.name = 'InvalidSchedulesError';
  }
}

export class InvalidCronExpressionError extends Error {
  readonly code = 'invalid_cron_expression';
  readonly expression: string;

  constructor(expression: string, problem: string) {
    super(
      `[flue] Invalid cron expression "${expression}": ${problem}. Expected five fields (minute hour day-of-month month day-of-week), e.g. "0 9 * * *".`,
    );
    this.name = 'InvalidCronExpressionError';
    this.expression = expression;
  }
}
