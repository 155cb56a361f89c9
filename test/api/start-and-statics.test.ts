/**
 * start() misuse, agent identity (agentName static, { agent, name } entries, the identity
 * pattern), and the durability static (validation, maxAttempts, timeoutMs) observed through real
 * submissions (seed 004 "start()", "智能体静态属性", "DurabilityConfig"; delivery.md §9;
 * agents-and-hooks.md §3–§4).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import {
  AgentDefinitionError,
  AgentRunError,
  dispatch,
  getAgentInstance,
  init,
  useModel,
  useTool,
  type Agent,
  type DurabilityConfig,
} from '@flue/runtime';
import { sqlite, start } from '@flue/runtime/node';
import { useScriptedRuntime } from '../support/scripted-runtime.ts';
import { MODEL, expectPlainFlueError, rejection } from './helpers.ts';

const ctx = useScriptedRuntime();

const tmp = mkdtempSync(join(tmpdir(), 'flue-api-statics-'));
let dbCount = 0;
const freshDbPath = () => join(tmp, `db-${++dbCount}.sqlite`);
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
afterEach(() => {
  vi.restoreAllMocks();
});

function Plain() {
  useModel(MODEL);
}

/** Runs one submission to its end and returns the read() outcome (reply or rejection). */
async function runOnce(agent: Agent, id: string) {
  const handle = init(agent, { id });
  const receipt = await handle.dispatch('go');
  try {
    return { reply: await handle.read(receipt), receipt };
  } catch (error) {
    return { error, receipt };
  }
}

describe('start()', () => {
  it('throws a plain Error for empty or missing agents', async () => {
    expectPlainFlueError(await rejection(start({ agents: [] })), /at least one agent/);
    expectPlainFlueError(await rejection(start({} as never)));
    expectPlainFlueError(await rejection(start(undefined as never)));
  });

  it('throws on a malformed entry', async () => {
    expectPlainFlueError(await rejection(ctx.start([42 as never])));
    expectPlainFlueError(await rejection(ctx.start([{ name: 'x' } as never])));
  });

  it('throws when a runtime is already configured, and the first keeps working', async () => {
    await ctx.start([Plain]);
    expectPlainFlueError(await rejection(start({ agents: [Plain], db: sqlite(), providers: [] })), /already/);
    ctx.server.script({ text: 'still here' });
    const { reply } = await runOnce(Plain, 'still');
    expect(reply?.text).toBe('still here');
  });

  it('after stop(), the verbs reject and a new start() is possible', async () => {
    const flue = await ctx.start([Plain]);
    await flue.stop();
    await expect(dispatch(Plain, { id: 'x', message: 'hi' })).rejects.toThrow(/\[flue\]/);
    await expect(getAgentInstance(Plain, 'x')).rejects.toThrow(/\[flue\]/);
    await expect(init(Plain, { id: 'x' }).read('sub_x')).rejects.toThrow(/\[flue\]/);
    await ctx.start([Plain]);
    expect(await getAgentInstance(Plain, 'x')).toBeNull();
  });

  it('supports await using (Symbol.asyncDispose stops the runtime)', async () => {
    {
      await using _flue = await start({ agents: [Plain], db: sqlite(), providers: [], env: {} });
      expect(await getAgentInstance(Plain, 'y')).toBeNull();
    }
    await expect(getAgentInstance(Plain, 'y')).rejects.toThrow(/configured/);
  });
});

describe('agent identity', () => {
  it('rejects an anonymous function without agentName or entry name', async () => {
    const error = await rejection(ctx.start([() => undefined]));
    expectPlainFlueError(error, /anonymous/);
    // Nothing was configured by the failed start().
    await expect(getAgentInstance(Plain, 'x')).rejects.toThrow(/configured/);
  });

  it('accepts an anonymous function as a { agent, name } entry', async () => {
    const inline = [() => useModel(MODEL)][0] as Agent;
    expect(inline.name).toBe('');
    await ctx.start([{ agent: inline, name: 'inline-agent' }]);
    ctx.server.script({ text: 'inline works' });
    const { reply } = await runOnce(inline, 'i');
    expect(reply?.text).toBe('inline works');
  });

  it.each([
    ['agentName with a colon', 'bad:name'],
    ['agentName with a leading digit', '1agent'],
    ['agentName with a leading hyphen', '-agent'],
    ['agentName with a double hyphen', 'a--b'],
    ['agentName with a trailing hyphen', 'agent-'],
    ['empty agentName', ''],
  ])('rejects an invalid identity: %s', async (_label, agentName) => {
    function Named() {
      useModel(MODEL);
    }
    Named.agentName = agentName;
    expectPlainFlueError(await rejection(ctx.start([Named])), /Invalid agent identity/);
  });

  it('rejects an invalid entry name and an invalid function name', async () => {
    expectPlainFlueError(await rejection(ctx.start([{ agent: Plain, name: 'has space' }])), /Invalid agent identity/);
    function _private() {
      useModel(MODEL);
    }
    expectPlainFlueError(await rejection(ctx.start([_private])), /Invalid agent identity/);
  });

  it('rejects two functions resolving to one identity', async () => {
    function First() {
      useModel(MODEL);
    }
    function Second() {
      useModel(MODEL);
    }
    First.agentName = 'desk';
    Second.agentName = 'desk';
    expectPlainFlueError(await rejection(ctx.start([First, Second])), /Duplicate agent identity/);
    expectPlainFlueError(
      await rejection(
        ctx.start([
          { agent: First, name: 'same' },
          { agent: Second, name: 'same' },
        ]),
      ),
      /Duplicate/,
    );
    // A function name colliding with another agent's agentName.
    function Desk() {
      useModel(MODEL);
    }
    expectPlainFlueError(await rejection(ctx.start([Desk, { agent: Second, name: 'Desk' }])), /Duplicate/);
  });

  it('rejects one function registered under two identities', async () => {
    expectPlainFlueError(
      await rejection(
        ctx.start([
          { agent: Plain, name: 'one' },
          { agent: Plain, name: 'two' },
        ]),
      ),
      /two identities/,
    );
  });

  it('agentName separates storage: two functions with different agentName are different agents', async () => {
    function Alpha() {
      useModel(MODEL);
    }
    function Beta() {
      useModel(MODEL);
    }
    Alpha.agentName = 'support-desk';
    Beta.agentName = 'billing-desk';
    await ctx.start([Alpha, Beta]);
    ctx.server.script({ text: 'a' });
    const a = await runOnce(Alpha, 'same-id');
    expect(await getAgentInstance(Beta, 'same-id')).toBeNull();
    expect(await getAgentInstance(Alpha, 'same-id')).toEqual({ id: 'same-id', uid: a.receipt.uid });
  });

  it('storage follows the identity, not the function: a renamed function with the same agentName finds its instance', async () => {
    const path = freshDbPath();
    function OldName() {
      useModel(MODEL);
    }
    OldName.agentName = 'stable-identity';
    const flue = await ctx.start([OldName], { db: sqlite(path) });
    ctx.server.script({ text: 'remembered reply' });
    const first = await runOnce(OldName, 'persisted');
    expect(first.reply?.text).toBe('remembered reply');
    await flue.stop();

    function NewName() {
      useModel(MODEL);
    }
    NewName.agentName = 'stable-identity';
    function OldNameWithoutStatic() {
      useModel(MODEL);
    }
    await ctx.start([NewName, OldNameWithoutStatic], { db: sqlite(path) });
    expect(await getAgentInstance(NewName, 'persisted')).toEqual({ id: 'persisted', uid: first.receipt.uid });
    expect((await init(NewName, { id: 'persisted' }).read(first.receipt)).text).toBe('remembered reply');
    expect(await getAgentInstance(OldNameWithoutStatic, 'persisted')).toBeNull();
  });

  it('an entry name overrides agentName', async () => {
    const path = freshDbPath();
    function Overridden() {
      useModel(MODEL);
    }
    Overridden.agentName = 'static-name';
    const flue = await ctx.start([{ agent: Overridden, name: 'entry-name' }], { db: sqlite(path) });
    ctx.server.script({ text: 'x' });
    const run = await runOnce(Overridden, 'e');
    await flue.stop();
    function ByStatic() {
      useModel(MODEL);
    }
    ByStatic.agentName = 'static-name';
    function ByEntry() {
      useModel(MODEL);
    }
    ByEntry.agentName = 'entry-name';
    await ctx.start([ByStatic, ByEntry], { db: sqlite(path) });
    expect(await getAgentInstance(ByStatic, 'e')).toBeNull();
    expect(await getAgentInstance(ByEntry, 'e')).toEqual({ id: 'e', uid: run.receipt.uid });
  });
});

describe('durability static', () => {
  it.each<[string, unknown]>([
    ['an unknown key', { maxAttempt: 3 }],
    ['maxAttempts 0', { maxAttempts: 0 }],
    ['negative timeoutMs', { timeoutMs: -5 }],
    ['timeoutMs 0', { timeoutMs: 0 }],
    ['fractional maxAttempts', { maxAttempts: 1.5 }],
    ['a string value', { timeoutMs: '1000' }],
    ['a non-object', 5],
  ])('%s rejects the dispatch itself, before anything is stored', async (_label, durability) => {
    function Misconfigured() {
      useModel(MODEL);
    }
    Misconfigured.durability = durability as DurabilityConfig;
    await ctx.start([Misconfigured]);
    ctx.server.script({ text: 'should not be used' });
    const error = await rejection(init(Misconfigured, { id: 'd' }).dispatch('go'));
    expect(error).toBeInstanceOf(AgentDefinitionError);
    expect(error).toMatchObject({ type: 'agent_definition_invalid', rule: 'durability' });
    expect((error as Error).message).toMatch(/^\[flue\] Agent "Misconfigured" has an invalid durability static: /);
    expect(await getAgentInstance(Misconfigured, 'd')).toBeNull();
    expect(ctx.server.requests).toHaveLength(0);
  });

  it('a valid durability static runs normally', async () => {
    function Configured() {
      useModel(MODEL);
    }
    Configured.durability = { maxAttempts: 3, timeoutMs: 60_000 };
    await ctx.start([Configured]);
    ctx.server.script({ text: 'fine' });
    expect((await runOnce(Configured, 'd')).reply?.text).toBe('fine');
  });

  it.each([
    [50, 'failed'],
    [30_000, 'completed'],
  ])('timeoutMs %d with a slow model → %s', async (timeoutMs, expected) => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    function Slow() {
      useModel(MODEL);
      useTool({ name: 'noop', description: 'Does nothing.', run: () => 'ok' });
    }
    Slow.durability = { timeoutMs };
    await ctx.start([Slow]);
    ctx.server.script(
      { text: 'thinking about it slowly', toolCalls: [{ name: 'noop', arguments: {} }], chunkDelayMs: 25 },
      { text: 'finished' },
    );
    const result = await runOnce(Slow, 't');
    if (expected === 'failed') {
      expect(result.error).toBeInstanceOf(AgentRunError);
      expect(result.error).toMatchObject({ outcome: 'failed' });
      expect((result.error as AgentRunError).cause).toMatchObject({ type: 'submission_timeout' });
      // Checked before the next turn: the second model call never happened.
      expect(ctx.server.requests).toHaveLength(1);
    } else {
      expect(result.reply?.text).toContain('finished');
      expect(ctx.server.requests).toHaveLength(2);
    }
  });

  it.each([
    [1, 'failed'],
    [2, 'completed'],
  ])('maxAttempts %d: an attempt interrupted by shutdown → %s on restart', async (maxAttempts, expected) => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const path = freshDbPath();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inTool = new Promise<void>((resolve) => (entered = resolve));
    function Fragile() {
      useModel(MODEL);
      useTool({
        name: 'wait_for_gate',
        description: 'Waits.',
        async run() {
          entered();
          await gate;
          return 'released';
        },
      });
    }
    Fragile.durability = { maxAttempts };
    const first = await ctx.start([Fragile], { db: sqlite(path) });
    ctx.server.script({ toolCalls: [{ name: 'wait_for_gate', arguments: {} }] });
    const receipt = await init(Fragile, { id: 'f' }).dispatch('go');
    await inTool;
    // Shutdown mid-attempt: stop() drains, and the tool still waiting when the grace period ends
    // is cut off, leaving the attempt unsettled.
    await first.stop({ graceMs: 50 });
    release();

    ctx.server.script({ text: 'second attempt answer' });
    await ctx.start([Fragile], { db: sqlite(path) });
    const outcome = await init(Fragile, { id: 'f' })
      .read(receipt)
      .then(
        (reply) => ({ reply, error: undefined }),
        (error: unknown) => ({ reply: undefined, error }),
      );
    if (expected === 'failed') {
      expect(outcome.error).toBeInstanceOf(AgentRunError);
      expect(outcome.error).toMatchObject({ outcome: 'failed', submissionId: receipt.submissionId });
      expect((outcome.error as AgentRunError).cause).toMatchObject({
        type: 'submission_retry_exhausted',
        meta: { attemptCount: 1, maxAttempts: 1 },
      });
      expect(ctx.server.requests).toHaveLength(1);
    } else {
      expect(outcome.error).toBeUndefined();
      expect(outcome.reply?.text).toBe('second attempt answer');
      expect(ctx.server.requests).toHaveLength(2);
    }
  });
});
