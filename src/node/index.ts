/** `@flue/runtime/node`: the Node target. */
export { start, type Flue, type StartAgentConfig, type StartAgentEntry, type StartOptions, type StopOptions } from './start.ts';
export { sqlite, type PersistenceAdapter } from './sqlite.ts';
export {
  local,
  LocalSandboxInvalidPathError,
  LocalSandboxPathError,
  LOCAL_DEFAULT_ENV_KEYS,
  LOCAL_MAX_OUTPUT_BYTES,
  type LocalSandboxOptions,
} from './local.ts';
export { runFlueServer, DEFAULT_PORT, type FlueServer, type FlueServerOptions } from './server.ts';
// For the server entry `flue build --target node` generates (node-entry.ts): configured providers call their API module directly.
export { withApiOnLoad } from '../runtime/model/providers.ts';
export { InvalidCronExpressionError, InvalidSchedulesError } from './schedule-errors.ts';
export type { ScheduleCallback, ScheduledTick, Schedules } from './schedules.ts';
