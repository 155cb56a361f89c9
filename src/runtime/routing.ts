/** `@flue/runtime/routing`: the HTTP mount of agents. */
export { createAgentRouter, type AgentRouterOptions } from './http/router.ts';

/**
 * The structural contract of an authored app entry's default export: anything with a compatible
 * `fetch`, a Hono app included. Cloudflare passes bindings as `env` and the ExecutionContext as
 * `ctx`; on Node `ctx` is undefined.
 */
export interface Fetchable {
  fetch(request: Request, env?: unknown, ctx?: unknown): Response | Promise<Response>;
}
