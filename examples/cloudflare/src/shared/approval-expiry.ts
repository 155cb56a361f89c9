/**
 * How long a release request waits for an operator before the gate denies it on its own (a
 * recorded `expired` result, through a durable timer). Five minutes: long enough to find the
 * operator token, short enough to watch the countdown run out in a demo.
 *
 * The Worker var `APPROVAL_EXPIRES_MS` overrides it (the page test sets a few seconds). It is read
 * from the process environment, which workerd fills from the Worker's vars under `nodejs_compat`,
 * so it is set by whoever deploys the Worker, never by a client of the app.
 */
export const DEFAULT_APPROVAL_EXPIRY_MS = 5 * 60_000;

export function approvalExpiryMs(env: Record<string, string | undefined> | undefined = processEnv()): number {
  const configured = env?.['APPROVAL_EXPIRES_MS'];
  if (configured === undefined || configured.trim() === '') return DEFAULT_APPROVAL_EXPIRY_MS;
  const ms = Number(configured);
  if (!Number.isSafeInteger(ms) || ms <= 0) {
    throw new Error(
      `APPROVAL_EXPIRES_MS must be a positive whole number of milliseconds; got ${JSON.stringify(configured)}. ` +
        `Unset it for the default of ${DEFAULT_APPROVAL_EXPIRY_MS} ms.`,
    );
  }
  return ms;
}

function processEnv(): Record<string, string | undefined> | undefined {
  return (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
}
