/**
 * Dev mode: whether the developer is the one reading errors. In dev mode HTTP envelopes carry
 * the `dev` prose of typed errors, and a submission that fails on the user's own (non-Flue) error
 * records that error's message and stack in its settlement error's `dev` field. Outside dev mode
 * both stay redacted, because settlement errors are streamed to every client of a conversation.
 *
 * Hosts decide it once: `flue dev` passes `FLUE_DEV=1` to the Worker (a Worker var
 * `NODE_ENV=development` also counts), and Node `start()` (scripts and tests) runs in dev mode
 * unless the environment says `NODE_ENV=production` or `FLUE_DEV=0`. Where no host decided,
 * `NODE_ENV=development` turns it on (read per call, when the platform exposes `process`).
 */

// A global symbol, so two copies of this module in one process agree.
const SLOT = Symbol.for('flue.devMode');
type Slot = { [SLOT]?: boolean };

export function setDevMode(on: boolean | undefined): void {
  if (on === undefined) delete (globalThis as Slot)[SLOT];
  else (globalThis as Slot)[SLOT] = on;
}

export function isDevMode(): boolean {
  const decided = (globalThis as Slot)[SLOT];
  if (decided !== undefined) return decided;
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  return env?.NODE_ENV === 'development';
}

/** The host's decision from its environment: `FLUE_DEV` wins, else `fallback`. */
export function devModeFromEnv(env: Record<string, unknown>, fallback: boolean): boolean {
  const flag = env.FLUE_DEV;
  if (flag === '1' || flag === 'true') return true;
  if (flag === '0' || flag === 'false') return false;
  return fallback;
}
