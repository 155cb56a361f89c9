/**
 * The app entry (`app.ts`'s default export) both hosts serve: its contract, public from
 * `@flue/runtime/routing`, and the check each host makes before serving it.
 */

/**
 * The structural contract of an authored app entry's default export: anything with a compatible
 * `fetch`, a Hono app included. Cloudflare passes bindings as `env` and the ExecutionContext as
 * `ctx`; on Node `ctx` is undefined.
 */
export interface Fetchable {
  fetch(request: Request, env?: unknown, ctx?: unknown): Response | Promise<Response>;
  /**
   * A cron callback beside `fetch`, fired on the crons of the wrangler file (`triggers.crons`) on
   * both targets: the Worker's `scheduled` handler on Cloudflare, a timer of the Node server (no
   * `env` there; `ctx.waitUntil` work is awaited). Define it here or in `cloudflare.ts`, not both.
   */
  scheduled?(controller: { readonly cron: string; readonly scheduledTime: number; noRetry(): void }, env?: unknown, ctx?: unknown): unknown;
}

/** The check both hosts make before they serve an app entry. */
export function assertFetchable(app: unknown): asserts app is Fetchable {
  if (typeof app !== 'object' || app === null || typeof (app as Fetchable).fetch !== 'function') {
    throw new Error('[flue] app.ts default export must be a Hono app or an object with a fetch(request, env, ctx) method.');
  }
}
