/**
 * Interop test support, Node host: `start({ agents, providers })` on the scripted model server, a
 * Hono app mounting `createAgentRouter(agent)`, served on loopback (support/loopback.ts), and SDK
 * clients whose fetch is recorded (support/wire-tap.ts). Everything a test opens is closed after it.
 */
import { Hono, type MiddlewareHandler } from 'hono';
import { afterEach, expect } from 'vitest';
import { createFlueClient, type AgentConversationObserveOptions, type FlueClient } from '@flue/sdk';
import type { Agent } from '@flue/runtime';
import { createAgentRouter, type AgentRouterOptions } from '@flue/runtime/routing';
import { buildAgentRouter, type RouterTiming } from '../../../src/runtime/http/router.ts';
import { useScriptedRuntime } from '../../support/scripted-runtime.ts';
import { inProcessFetch, serveFetch, type LoopbackServer } from './loopback.ts';
import { watch, withTimeout, type Watched } from './observation.ts';
import { protocolViolations, wireTap, type WireTap } from './wire-tap.ts';

export const MOUNT = '/agents/support';

export interface NodeHost {
  http: LoopbackServer;
  app: Hono;
  tap: WireTap;
  /** An SDK client for conversation `id` over loopback HTTP, its fetch recorded by `tap`. */
  client(id: string): FlueClient;
  /** An SDK client that reaches the app in process through the `fetch` option (no socket). */
  inProcessClient(id: string): FlueClient;
  observe(client: FlueClient, options?: AgentConversationObserveOptions): Watched;
}

/**
 * Registers the scripted runtime for the file; `host()` starts a runtime with `agents` and serves
 * `agent`'s router (`timing` = the router's test knob for the live-mode windows).
 */
export function useNodeHost() {
  const ctx = useScriptedRuntime();
  const open: { http?: LoopbackServer; watched: Watched[] } = { watched: [] };

  // Registered after useScriptedRuntime's hook, so it runs first (hooks unwind as a stack):
  // observers and sockets close before the runtime stops.
  afterEach(async () => {
    for (const watched of open.watched.splice(0)) watched.close();
    await open.http?.close();
    open.http = undefined;
  });

  async function host(
    agent: Agent,
    options: {
      agents?: Agent[];
      timing?: Partial<RouterTiming>;
      contextWindow?: number;
      /** Host middleware in front of the mount (e.g. auth), as an app would compose it. */
      middleware?: MiddlewareHandler;
      /** The router's options, e.g. `{ signals: true }` where a test sends signals through the SDK. */
      router?: AgentRouterOptions;
    } = {},
  ): Promise<NodeHost> {
    await ctx.start(options.agents ?? [agent], options.contextWindow === undefined ? {} : { contextWindow: options.contextWindow });
    const router =
      options.timing === undefined ? createAgentRouter(agent, options.router) : buildAgentRouter(agent, options.timing, options.router);
    const app = new Hono();
    if (options.middleware !== undefined) app.use(`${MOUNT}/*`, options.middleware);
    app.route(MOUNT, router);
    const http = await serveFetch(app.fetch);
    open.http = http;
    const tap = wireTap();
    return {
      http,
      app,
      tap,
      client: (id) => createFlueClient({ url: `${http.url}${MOUNT}/${encodeURIComponent(id)}`, fetch: tap.fetch }),
      inProcessClient: (id) =>
        createFlueClient({ url: `http://flue.test${MOUNT}/${encodeURIComponent(id)}`, fetch: inProcessFetch(app.fetch) }),
      observe(client, observeOptions) {
        const watched = watch(client.observe(observeOptions));
        open.watched.push(watched);
        return watched;
      },
    };
  }

  return { ctx, host };
}

/** Every exchange the host's tap recorded follows streaming-protocol.md. */
export async function expectConformant(h: NodeHost) {
  await withTimeout(h.tap.settled(), 5_000, 'recorded bodies');
  expect(protocolViolations(h.tap.exchanges)).toEqual([]);
}
