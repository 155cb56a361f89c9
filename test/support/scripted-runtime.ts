/**
 * Test support: a scripted model server on loopback plus a `start()` runtime whose providers
 * point the seeds' model specifiers (`anthropic/claude-haiku-4-5`, `anthropic/claude-sonnet-4-6`)
 * at it through pi-ai's real Anthropic provider.
 */
import { afterAll, afterEach, beforeAll } from 'vitest';
import { start, sqlite, type Flue, type StartAgentEntry, type PersistenceAdapter } from '@flue/runtime/node';
import { scriptedProvider, startScriptedModelServer, type ScriptedModelServer } from '@flue/runtime/testing';

export const SEED_MODELS = ['claude-haiku-4-5', 'claude-sonnet-4-6'];

export function seedProviders(server: ScriptedModelServer, options: { contextWindow?: number } = {}) {
  return [
    scriptedProvider({
      baseUrl: server.url,
      id: 'anthropic',
      models: SEED_MODELS,
      api: 'anthropic-messages',
      ...(options.contextWindow === undefined ? {} : { contextWindow: options.contextWindow }),
    }),
    scriptedProvider({ baseUrl: server.url, id: 'scripted', models: ['model'], api: 'openai-completions' }),
  ];
}

/**
 * Registers a scripted server for the file and a helper that starts a runtime per test; the
 * runtime is stopped after each test (one runtime per process).
 */
export function useScriptedRuntime() {
  const ctx: {
    server: ScriptedModelServer;
    flue: Flue | undefined;
    start(agents: readonly StartAgentEntry[], options?: { db?: PersistenceAdapter; contextWindow?: number }): Promise<Flue>;
  } = {
    server: undefined as unknown as ScriptedModelServer,
    flue: undefined,
    async start(agents, options = {}) {
      ctx.flue = await start({
        agents,
        db: options.db ?? sqlite(),
        providers: seedProviders(ctx.server, options),
        env: {},
      });
      return ctx.flue;
    },
  };
  beforeAll(async () => {
    ctx.server = await startScriptedModelServer();
  });
  afterEach(async () => {
    await ctx.flue?.stop();
    ctx.flue = undefined;
    ctx.server.reset();
  });
  afterAll(async () => {
    await ctx.server.close();
  });
  return ctx;
}
