/** `@flue/runtime/node`: the Node target. */
export { start, type Flue, type StartAgentConfig, type StartAgentEntry, type StartOptions } from './start.ts';
export { sqlite, type PersistenceAdapter } from './sqlite.ts';
