/** `@flue/runtime/routing`: the HTTP mount of agents. */
export { createAgentRouter, type AgentRouterOptions } from './http/router.ts';

export type { Fetchable } from './host/app-entry.ts';
