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

/**
 * A host's decision, or a function that makes it when dev mode is first asked about: a Worker's
 * falls back on `process.env`, and the first read of `process` loads Node's process module in
 * workerd (a few milliseconds), which a start need not pay.
 */
export type DevModeDecision = boolean | (() => boolean);

// A global symbol, so two copies of this module in one process agree.
const SLOT = Symbol.for('flue.devMode');
type Slot = { [SLOT]?: DevModeDecision };

export function setDevMode(on: DevModeDecision | undefined): void {
  if (on === undefined) delete (globalThis as Slot)[SLOT];
  else (globalThis as Slot)[SLOT] = on;
}

export function isDevMode(): boolean {
  const slot = globalThis as Slot;
  const decided = slot[SLOT];
  if (typeof decided === 'function') return (slot[SLOT] = decided());
  return decided ?? processDevMode();
}

/** `isDevMode()` as a decision that reads `process` only when first needed. */
export function devModeSoFar(): DevModeDecision {
  return (globalThis as Slot)[SLOT] ?? processDevMode;
}

function processDevMode(): boolean {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  return env?.NODE_ENV === 'development';
}

/** The host's decision from its environment: `FLUE_DEV` wins, else `fallback`. */
export function devModeFromEnv(env: Record<string, unknown>, fallback: DevModeDecision): DevModeDecision {
  return flueDevFlag(env) ?? fallback;
}

function flueDevFlag(env: Record<string, unknown> | undefined): boolean | undefined {
  const flag = env?.FLUE_DEV;
  if (flag === '1' || flag === 'true') return true;
  if (flag === '0' || flag === 'false') return false;
  return undefined;
}

// Whether `flue dev` serves this process or isolate. Narrower than dev mode, which `start()`
// scripts and tests also run in: only under `flue dev` may user modules run again and replace
// what they installed (an `instrument()` key), so only there is a repeated install not a mistake.
const DEV_SERVER_SLOT = Symbol.for('flue.devServer');
type DevServerSlot = { [DEV_SERVER_SLOT]?: boolean };

/** Set by the host from its env (`FLUE_DEV=1`, which only `flue dev` passes); undefined clears it. */
export function setDevServerFromEnv(env: Record<string, unknown> | undefined): void {
  if (env === undefined) delete (globalThis as DevServerSlot)[DEV_SERVER_SLOT];
  else (globalThis as DevServerSlot)[DEV_SERVER_SLOT] = flueDevFlag(env) === true;
}

/**
 * Whether `flue dev` runs this host. Before a host decided (module top level runs before the
 * runtime is configured), the process env says: `flue dev --target node` sets `FLUE_DEV=1` on it.
 */
export function isDevServer(): boolean {
  const decided = (globalThis as DevServerSlot)[DEV_SERVER_SLOT];
  if (decided !== undefined) return decided;
  return flueDevFlag((globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env) === true;
}
