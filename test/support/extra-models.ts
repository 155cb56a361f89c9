/**
 * Test support: two scripted models beside the seed ones, for what the seed models cannot show.
 * `reasoner/think` is a reasoning model (its request carries the thinking setting) and
 * `rated/priced` reports per-million-token rates (so usage costs are not all zero).
 */
import { start, sqlite, type StartAgentEntry } from '@flue/runtime/node';
import { scriptedProvider, type RecordedRequest } from '@flue/runtime/testing';
import { seedProviders, type useScriptedRuntime } from './scripted-runtime.ts';

export const RATES = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };

/** Starts a runtime with the seed providers and the two models above; the file's afterEach stops it. */
export async function startWithExtraModels(ctx: ReturnType<typeof useScriptedRuntime>, agents: readonly StartAgentEntry[]) {
  const rated = scriptedProvider({ baseUrl: ctx.server.url, id: 'rated', models: ['priced'], api: 'anthropic-messages' });
  ctx.flue = await start({
    agents,
    db: sqlite(),
    providers: [
      ...seedProviders(ctx.server),
      scriptedProvider({ baseUrl: ctx.server.url, id: 'reasoner', models: ['think'], api: 'anthropic-messages', reasoning: true }),
      Object.assign(Object.create(rated) as typeof rated, {
        getModels: () => rated.getModels().map((model) => ({ ...model, cost: RATES })),
      }),
    ],
    env: {},
  });
  return ctx.flue;
}

/** The Anthropic thinking budget a request asked for; undefined when thinking is off or absent. */
export function thinkingBudget(request: RecordedRequest): number | undefined {
  const thinking = request.body.thinking as { type?: string; budget_tokens?: number } | undefined;
  return thinking?.type === 'enabled' ? thinking.budget_tokens : undefined;
}
