/**
 * Errors a newcomer meets first, as the caller sees them: a broken agent definition (async
 * function, bad `durability` static) rejects the send itself with a typed error; a bad `useTool()`
 * definition, an unknown model id and a provider without credentials settle the submission with a
 * typed error naming the reason; the user's own errors stay redacted except in dev mode.
 */
import { Hono } from 'hono';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { anthropicProvider } from '@earendil-works/pi-ai/providers/anthropic';
import {
  AgentDefinitionError,
  AgentRunError,
  ProviderNotConfiguredError,
  ToolDefinitionError,
  UnknownModelError,
  dispatch,
  getAgentInstance,
  init,
  useModel,
  useTool,
  type Agent,
  type DurabilityConfig,
  type SettlementError,
} from '@flue/runtime';
import { start, sqlite, type Flue } from '@flue/runtime/node';
import { createAgentRouter } from '@flue/runtime/routing';
import { seedProviders, useScriptedRuntime } from '../support/scripted-runtime.ts';
import { MODEL, expectFlueError, rejection } from './helpers.ts';

const ctx = useScriptedRuntime();
const SYNC = '[flue] Agent functions must be synchronous.';

let own: Flue | undefined;
afterEach(async () => {
  await own?.stop();
  own = undefined;
});

/** Dispatches once and returns the settlement error `read()` rejects with. */
async function settlementErrorOf(agent: Agent, id: string): Promise<SettlementError> {
  const handle = init(agent, { id });
  const receipt = await handle.dispatch('go');
  const error = await rejection(handle.read(receipt));
  expect(error).toBeInstanceOf(AgentRunError);
  expect((error as AgentRunError).outcome).toBe('failed');
  return (error as AgentRunError).cause as SettlementError;
}

async function postPrompt(agent: Agent, id: string): Promise<Response> {
  const app = new Hono().route('/agents/x', createAgentRouter(agent));
  return app.fetch(
    new Request(`http://flue.test/agents/x/${id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'user', body: 'hi' }),
    }),
  );
}

describe('an async agent function', () => {
  async function AsyncAgent() {
    useModel(MODEL);
    return 'instructions';
  }
  const AsyncArrow: Agent = Object.assign(async () => 'x', { agentName: 'async-arrow' }) as unknown as Agent;

  it('dispatch() rejects with AgentDefinitionError carrying the seed text, and stores nothing', async () => {
    await ctx.start([AsyncAgent as unknown as Agent, AsyncArrow]);
    for (const agent of [AsyncAgent as unknown as Agent, AsyncArrow]) {
      const error = expectFlueError(
        await rejection(dispatch(agent, { id: 'a', message: 'hi' })),
        AgentDefinitionError,
        'agent_definition_invalid',
      );
      expect(error.message.startsWith(SYNC)).toBe(true);
      expect(error.meta).toMatchObject({ rule: 'synchronous' });
      expect(error.details).toMatch(/async/);
      expect(await getAgentInstance(agent, 'a')).toBeNull();
    }
    const handle = init(AsyncAgent as unknown as Agent, { id: 'b' });
    expectFlueError(await rejection(handle.dispatch('hi')), AgentDefinitionError, 'agent_definition_invalid');
    expect(ctx.server.requests).toHaveLength(0);
  });

  it('HTTP answers with the typed envelope (500, type agent_definition_invalid), not internal_error', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    await ctx.start([AsyncAgent as unknown as Agent]);
    const response = await postPrompt(AsyncAgent as unknown as Agent, 'h');
    expect(response.status).toBe(500);
    const body = (await response.json()) as { error: { type: string; message: string; meta: unknown; ref: string } };
    expect(body.error.type).toBe('agent_definition_invalid');
    expect(body.error.message.startsWith(SYNC)).toBe(true);
    expect(body.error.meta).toEqual({ rule: 'synchronous', agent: 'AsyncAgent' });
    expect(body.error.ref).toMatch(/^err_/);
  });

  it('a sync function that returns a promise fails its submission with the same typed error', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    function Sneaky() {
      useModel(MODEL);
      return Promise.resolve('later') as unknown as string;
    }
    await ctx.start([Sneaky]);
    const cause = await settlementErrorOf(Sneaky, 's');
    expect(cause.type).toBe('agent_definition_invalid');
    expect(cause.message.startsWith(SYNC)).toBe(true);
  });
});

describe('a bad durability static', () => {
  it('rejects the dispatch itself with AgentDefinitionError naming the reason', async () => {
    function Misconfigured() {
      useModel(MODEL);
    }
    Misconfigured.durability = { maxAttempt: 3 } as DurabilityConfig;
    await ctx.start([Misconfigured]);
    const error = expectFlueError(
      await rejection(dispatch(Misconfigured, { id: 'd', message: 'hi' })),
      AgentDefinitionError,
      'agent_definition_invalid',
    );
    expect(error.message).toBe(
      '[flue] Agent "Misconfigured" has an invalid durability static: durability has unknown key "maxAttempt" (allowed: maxAttempts, timeoutMs, modelIdleTimeoutMs).',
    );
    expect(error.meta).toEqual({ rule: 'durability', agent: 'Misconfigured' });
    expect(await getAgentInstance(Misconfigured, 'd')).toBeNull();

    vi.spyOn(console, 'error').mockImplementation(() => {});
    const response = await postPrompt(Misconfigured, 'h');
    expect(response.status).toBe(500);
    expect(((await response.json()) as { error: { type: string } }).error.type).toBe('agent_definition_invalid');
  });
});

describe('errors in the render reach read() typed', () => {
  it('an invalid useTool() definition settles with ToolDefinitionError and its reason', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    function BadTool() {
      useModel(MODEL);
      useTool({ name: 'lookup', description: 'Look up.', run: 'not a function' } as never);
    }
    await ctx.start([BadTool]);
    const cause = await settlementErrorOf(BadTool, 't');
    expect(cause).toMatchObject({
      type: 'tool_definition_invalid',
      message: '[flue] useTool(): tool "lookup": "run" must be a function, received a string.',
      meta: { site: 'useTool', tool: 'lookup' },
    });
    expect(new ToolDefinitionError('x', { site: 'useTool' }).type).toBe('tool_definition_invalid');
  });

  it('an unknown model id settles with UnknownModelError listing what exists', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    function Typo() {
      useModel('anthropic/claude-haiku-9');
    }
    await ctx.start([Typo]);
    const cause = await settlementErrorOf(Typo, 'm');
    expect(cause.type).toBe('unknown_model');
    expect(cause.message).toMatch(
      /^\[flue\] Unknown model ID "claude-haiku-9" for provider "anthropic"\. Declared model IDs: claude-haiku-4-5/,
    );
    expect(cause.meta).toEqual({
      specifier: 'anthropic/claude-haiku-9',
      provider: 'anthropic',
      modelId: 'claude-haiku-9',
      reason: 'unknown_model',
    });
    expect(new UnknownModelError('x', { specifier: 'a/b', provider: 'a', reason: 'unknown_provider' }).name).toBe('UnknownModelError');
  });

  it('an unknown provider settles with UnknownModelError (reason unknown_provider)', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    function Elsewhere() {
      useModel('nowhere/model');
    }
    await ctx.start([Elsewhere]);
    const cause = await settlementErrorOf(Elsewhere, 'p');
    expect(cause.type).toBe('unknown_model');
    expect(cause.message).toMatch(/^\[flue\] Unknown provider "nowhere" in model specifier "nowhere\/model"\./);
    expect(cause.meta).toMatchObject({ reason: 'unknown_provider' });
  });
});

describe('hook mistakes and a missing model reach read() typed', () => {
  it.each<[string, () => unknown, string, RegExp]>([
    ['useModel() twice', () => (useModel(MODEL), useModel(MODEL)), 'hook_usage', /^\[flue\] useModel\(\) was called twice in one render/],
    [
      'no useModel()',
      () => 'instructions only',
      'model_required',
      /^\[flue\] The agent requires a model\. Call useModel\('provider-id\/model-id'\)/,
    ],
  ])('%s settles with AgentDefinitionError naming the rule', async (_label, body, rule, message) => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const Broken = Object.assign(() => body(), { agentName: 'broken' }) as unknown as Agent;
    await ctx.start([Broken]);
    const cause = await settlementErrorOf(Broken, 'k');
    expect(cause.type).toBe('agent_definition_invalid');
    expect(cause.meta).toMatchObject({ rule });
    expect(cause.message).toMatch(message);
  });
});

describe('a provider without credentials', () => {
  it('settles with ProviderNotConfiguredError naming the variable to set', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    function Real() {
      useModel('anthropic/claude-haiku-4-5');
    }
    // pi's real anthropic provider with an empty environment: auth fails before any network call.
    own = await start({ agents: [Real], db: sqlite(), providers: [anthropicProvider()], env: {} });
    const cause = await settlementErrorOf(Real, 'n');
    expect(cause.type).toBe('provider_not_configured');
    // On Node the message names Node's places for the key, not the Worker's.
    expect(cause.message).toBe(
      "Provider is not configured: anthropic. Set ANTHROPIC_API_KEY (in the environment or the project's .env; in a script, start({ env })), " +
        'or set FLUE_SCRIPTED_MODEL_URL to use a scripted model.',
    );
    expect(cause.meta).toEqual({ provider: 'anthropic', envVars: ['ANTHROPIC_API_KEY'] });
    expect(new ProviderNotConfiguredError('custom', []).message).toMatch(
      /^Provider is not configured: custom\. Set the provider's API key variable/,
    );
  });
});

describe("the user's own errors", () => {
  function Broken() {
    useModel(MODEL);
    throw new TypeError('customer lookup table missing');
  }

  it('in dev mode (start() outside production) read() reaches the message and stack in cause.dev', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    own = await start({ agents: [Broken], db: sqlite(), providers: seedProviders(ctx.server), env: {} });
    const cause = await settlementErrorOf(Broken, 'dev');
    expect(cause.type).toBe('internal_error');
    expect(cause.message).toBe('An internal error occurred.');
    // The head names the first frame under the working directory's src/ (here the runtime's own,
    // since this test runs from the package checkout; in a project it is the user's code).
    expect(cause.dev).toMatch(
      /^TypeError: customer lookup table missing \(at src\/[\w/.-]+\.ts:\d+:\d+\)\n\s+at Broken \(test\/api\/definition-errors\.test\.ts:\d+:\d+\)/,
    );
  });

  it('in production the settlement stays redacted for every reader, HTTP included', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    own = await start({ agents: [Broken], db: sqlite(), providers: seedProviders(ctx.server), env: { NODE_ENV: 'production' } });
    const cause = await settlementErrorOf(Broken, 'prod');
    expect(cause).toEqual({
      type: 'internal_error',
      message: 'An internal error occurred.',
      details: 'The submission failed on an error the runtime does not expose.',
    });
    const app = new Hono().route('/agents/x', createAgentRouter(Broken));
    const history = await (await app.fetch(new Request('http://flue.test/agents/x/prod?view=history'))).text();
    expect(history).not.toContain('customer lookup table missing');
    expect(history).toContain('internal_error');
  });

  it('FLUE_DEV=0 turns dev mode off even outside production', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    own = await start({ agents: [Broken], db: sqlite(), providers: seedProviders(ctx.server), env: { FLUE_DEV: '0' } });
    expect((await settlementErrorOf(Broken, 'off')).dev).toBeUndefined();
  });
});
