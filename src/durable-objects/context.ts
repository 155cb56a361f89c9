/**
 * `getCloudflareContext()` and `getDurableObjectIdentity()`: what code running inside a generated
 * agent object (tools, hooks, RPC, alarms) can ask about where it runs (cloudflare.md §10).
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface DurableObjectIdentity {
  bindingName: string;
  className: string;
  /** The agent instance id. */
  name: string;
  /** `ctx.id.toString()`. */
  id: string;
}

export interface CloudflareContext {
  env: Record<string, unknown>;
  storage: { sql: SqlStorage };
  durableObjectIdentity?: DurableObjectIdentity;
}

const storage = new AsyncLocalStorage<CloudflareContext>();

export function runInCloudflareContext<T>(context: CloudflareContext, fn: () => T): T {
  return storage.run(context, fn);
}

export function getCloudflareContext(): CloudflareContext {
  const context = storage.getStore();
  if (context === undefined) {
    throw new Error(
      '[flue] Not running in a Cloudflare context. This function can only be called inside a Cloudflare Worker or Durable Object.',
    );
  }
  return context;
}

export function getDurableObjectIdentity(): DurableObjectIdentity {
  const identity = storage.getStore()?.durableObjectIdentity;
  if (identity === undefined) throw new Error('[flue] Durable Object identity is not available in this Cloudflare context.');
  return identity;
}
