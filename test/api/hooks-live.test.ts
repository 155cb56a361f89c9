/**
 * Hooks in a live runtime, driven through dispatch()/read() against the scripted model:
 * persistent state, data writers, response metadata, useAgentStart/useAgentFinish appends and the
 * 32-cycle ceiling, useDelivery() across a join, and useDispatchMessage() (agents-and-hooks.md §6,
 * §8; delivery.md §5, §7).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  AgentRunError,
  init,
  useAgentFinish,
  useAgentStart,
  useDataWriter,
  useDelivery,
  useDispatchMessage,
  useModel,
  usePersistentState,
  useResponseFinish,
  useResponseStart,
  useTool,
  type Agent,
  type ConversationStreamChunk,
  type DispatchReceipt,
} from '@flue/runtime';
import { useScriptedRuntime } from '../support/scripted-runtime.ts';
import { MODEL, rejection, sleep, transcript } from './helpers.ts';
import { promptOf } from '../support/prompts.ts';

const ctx = useScriptedRuntime();

afterEach(() => {
  vi.restoreAllMocks();
});

/** Keeps expected `[flue]` failure logs out of the test output. */
function quietErrors() {
  vi.spyOn(console, 'error').mockImplementation(() => {});
}

async function send(agent: Agent, id: string, message: string) {
  const handle = init(agent, { id });
  const receipt = await handle.dispatch(message);
  return { handle, receipt };
}

describe('usePersistentState', () => {
  function Counter() {
    useModel(MODEL);
    const [count, setCount] = usePersistentState('count', 0);
    useTool({
      name: 'bump_twice',
      description: 'Adds two.',
      run() {
        setCount((n) => n + 1);
        setCount((n) => n + 1);
        return 'bumped';
      },
    });
    useTool({
      name: 'set_then_double',
      description: 'Sets 5 then doubles.',
      run() {
        setCount(5);
        setCount((n) => n * 2);
        return 'done';
      },
    });
    return `count=${count}`;
  }

  it('two updaters in one tool call both apply, and the value persists across submissions', async () => {
    await ctx.start([Counter]);
    ctx.server.script({ toolCalls: [{ name: 'bump_twice', arguments: {} }] }, { text: 'ok' }, { text: 'still' });
    const { handle, receipt } = await send(Counter, 'c', 'bump');
    await handle.read(receipt);
    expect(ctx.server.requests[0]!.system).toBe(promptOf('count=0'));
    expect(ctx.server.requests[1]!.system).toBe(promptOf('count=2'));
    await handle.read(await handle.dispatch('again'));
    expect(ctx.server.requests[2]!.system).toBe(promptOf('count=2'));
  });

  it('an updater sees a value set earlier in the same tool call', async () => {
    await ctx.start([Counter]);
    ctx.server.script({ toolCalls: [{ name: 'set_then_double', arguments: {} }] }, { text: 'ok' });
    const { handle, receipt } = await send(Counter, 'c2', 'go');
    await handle.read(receipt);
    expect(ctx.server.requests[1]!.system).toBe(promptOf('count=10'));
  });

  it('two updaters in parallel tool calls of one batch both apply', async () => {
    await ctx.start([Counter]);
    ctx.server.script(
      {
        toolCalls: [
          { name: 'bump_twice', arguments: {} },
          { name: 'bump_twice', arguments: {} },
        ],
      },
      { text: 'ok' },
    );
    const { handle, receipt } = await send(Counter, 'c3', 'go');
    await handle.read(receipt);
    expect(ctx.server.requests[1]!.system).toBe(promptOf('count=4'));
  });

  function Unsettable() {
    useModel(MODEL);
    const [value, setValue] = usePersistentState('value', 'initial');
    useTool({
      name: 'clear',
      description: 'Tries to unset.',
      run() {
        setValue(undefined as never);
        return 'cleared';
      },
    });
    useTool({
      name: 'store_bigint',
      description: 'Tries a non-JSON value.',
      run() {
        setValue(10n as never);
        return 'stored';
      },
    });
    return `value=${value}`;
  }

  it('set(undefined) throws inside the tool: the model gets an error result, the state is unchanged', async () => {
    await ctx.start([Unsettable]);
    ctx.server.script({ toolCalls: [{ name: 'clear', arguments: {} }] }, { text: 'noted' });
    const { handle, receipt } = await send(Unsettable, 'u', 'go');
    const reply = await handle.read(receipt);
    expect(reply.text).toBe('noted');
    const result = ctx.server.requests[1]!.messages.find((m) => m.role === 'tool');
    expect(result?.isError).toBe(true);
    expect(result?.content).toMatch(/undefined/);
    expect(ctx.server.requests[1]!.system).toBe(promptOf('value=initial'));
  });

  it('a non-serializable value throws inside the tool', async () => {
    await ctx.start([Unsettable]);
    ctx.server.script({ toolCalls: [{ name: 'store_bigint', arguments: {} }] }, { text: 'noted' });
    const { handle, receipt } = await send(Unsettable, 'u2', 'go');
    await handle.read(receipt);
    const result = ctx.server.requests[1]!.messages.find((m) => m.role === 'tool');
    expect(result?.isError).toBe(true);
    expect(ctx.server.requests[1]!.system).toBe(promptOf('value=initial'));
  });

  it('a write equal to the current (default) value is a no-op: the default is not persisted', async () => {
    let fallback = 'first-default';
    function Defaulted() {
      useModel(MODEL);
      const [mode, setMode] = usePersistentState('mode', fallback);
      useTool({
        name: 'write_same',
        description: 'Writes the current value.',
        run() {
          setMode('first-default');
          fallback = 'second-default';
          return 'ok';
        },
      });
      return `mode=${mode}`;
    }
    await ctx.start([Defaulted]);
    ctx.server.script({ toolCalls: [{ name: 'write_same', arguments: {} }] }, { text: 'ok' });
    const { handle, receipt } = await send(Defaulted, 'd', 'go');
    await handle.read(receipt);
    // Had the write been recorded, 'first-default' would now shadow the changed default.
    expect(ctx.server.requests[1]!.system).toBe(promptOf('mode=second-default'));
  });

  it('a deep-equal write with another key order is a no-op too', async () => {
    let fallback: Record<string, number> = { a: 1, b: 2 };
    function Ordered() {
      useModel(MODEL);
      const [value, setValue] = usePersistentState('obj', fallback);
      useTool({
        name: 'write_reordered',
        description: 'Writes a deep-equal object.',
        run() {
          setValue({ b: 2, a: 1 });
          fallback = { changed: 1 };
          return 'ok';
        },
      });
      return `obj=${JSON.stringify(value)}`;
    }
    await ctx.start([Ordered]);
    ctx.server.script({ toolCalls: [{ name: 'write_reordered', arguments: {} }] }, { text: 'ok' });
    const { handle, receipt } = await send(Ordered, 'd2', 'go');
    await handle.read(receipt);
    // { b: 2, a: 1 } deep-equals the current { a: 1, b: 2 }: nothing may be written.
    expect(ctx.server.requests[1]!.system).toBe(promptOf('obj={"changed":1}'));
  });
});

describe('useDataWriter', () => {
  function Reporter() {
    useModel(MODEL);
    const progress = useDataWriter('progress');
    const sources = useDataWriter('sources');
    useTool({
      name: 'work',
      description: 'Works.',
      run() {
        progress('started');
        progress({ pct: 50 });
        sources(['doc-1']);
        return 'ok';
      },
    });
    useAgentFinish(() => {
      progress(100);
    });
  }

  it('writes appear in AgentReply.data[name], every write in order', async () => {
    await ctx.start([Reporter]);
    ctx.server.script({ toolCalls: [{ name: 'work', arguments: {} }] }, { text: 'done' }, { text: 'plain' });
    const { handle, receipt } = await send(Reporter, 'r', 'go');
    const reply = await handle.read(receipt);
    expect(reply.data).toEqual({ progress: ['started', { pct: 50 }, 100], sources: [['doc-1']] });
    expect(reply.text).toBe('done');
    // The next response has its own data.
    const next = await handle.read(await handle.dispatch('again'));
    expect(next.data).toEqual({ progress: [100] });
    // And the first reply is unchanged when read again.
    expect((await handle.read(receipt)).data).toEqual(reply.data);
  });

  it('writes stream as data-part chunks', async () => {
    await ctx.start([Reporter]);
    ctx.server.script({ toolCalls: [{ name: 'work', arguments: {} }] }, { text: 'done' });
    const { handle, receipt } = await send(Reporter, 'r2', 'go');
    const parts: unknown[] = [];
    await handle.read(receipt, {
      onEvent: (chunk) => {
        if (chunk.type === 'data-part') parts.push([chunk.name, chunk.data]);
      },
    });
    expect(parts).toEqual([
      ['progress', 'started'],
      ['progress', { pct: 50 }],
      ['sources', ['doc-1']],
      ['progress', 100],
    ]);
  });
});

describe('useResponseStart / useResponseFinish metadata', () => {
  it('merges deeply, later keys win, undefined and top-level prototype keys are dropped, and lands in AgentReply.metadata', async () => {
    let finishSaw: unknown;
    function Meta() {
      useModel(MODEL);
      useResponseStart(() => {
        const metadata = JSON.parse(
          '{"stage":"start","nested":{"a":1,"keep":true},"constructor":"x","prototype":"y","__proto__":{"polluted":true}}',
        ) as Record<string, unknown>;
        metadata.skipped = undefined;
        return metadata;
      });
      useResponseStart(() => ({ stage: 'start-2', nested: { b: 2 } }));
      useResponseStart(() => undefined);
      useResponseFinish((ctx) => {
        finishSaw = ctx.metadata;
        return { stage: 'finish', nested: { a: 3 } };
      });
    }
    await ctx.start([Meta]);
    ctx.server.script({ text: 'hello' });
    const { handle, receipt } = await send(Meta, 'm', 'go');
    const reply = await handle.read(receipt);
    expect(reply.metadata).toStrictEqual({ stage: 'finish', nested: { a: 3, keep: true, b: 2 } });
    expect(Object.keys(reply.metadata!).sort()).toEqual(['nested', 'stage']);
    expect(finishSaw).toStrictEqual({ stage: 'start-2', nested: { a: 1, keep: true, b: 2 } });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('the merge rules apply at every depth: nested prototype keys and undefined values are dropped too', async () => {
    function NestedMeta() {
      useModel(MODEL);
      useResponseStart(() => {
        const metadata = JSON.parse('{"nested":{"a":1,"__proto__":{"polluted":true},"constructor":"x","prototype":"y"}}') as {
          nested: Record<string, unknown>;
        };
        metadata.nested.skipped = undefined;
        return metadata;
      });
    }
    await ctx.start([NestedMeta]);
    ctx.server.script({ text: 'hello' });
    const { handle, receipt } = await send(NestedMeta, 'm-nested', 'go');
    const reply = await handle.read(receipt);
    expect(Object.keys(reply.metadata!.nested as object)).toEqual(['a']);
    expect(reply.metadata).toStrictEqual({ nested: { a: 1 } });
  });

  it('no hooks → no metadata on the reply', async () => {
    function Bare() {
      useModel(MODEL);
    }
    await ctx.start([Bare]);
    ctx.server.script({ text: 'hello' });
    const { handle, receipt } = await send(Bare, 'm2', 'go');
    expect((await handle.read(receipt)).metadata).toBeUndefined();
  });

  it.each<[string, unknown]>([
    ['a string', 'meta'],
    ['an array', [1]],
    ['a promise', Promise.resolve({ a: 1 })],
  ])('returning %s fails the submission', async (_label, value) => {
    quietErrors();
    function BadMeta() {
      useModel(MODEL);
      useResponseStart(() => value as never);
    }
    await ctx.start([BadMeta]);
    ctx.server.script({ text: 'unused' });
    const { handle, receipt } = await send(BadMeta, 'm3', 'go');
    const error = await rejection(handle.read(receipt));
    expect(error).toBeInstanceOf(AgentRunError);
    expect(error).toMatchObject({ outcome: 'failed' });
  });
});

describe('useAgentFinish', () => {
  it('an append continues the same response with another model turn', async () => {
    let calls = 0;
    function Reviewer() {
      useModel(MODEL);
      useAgentFinish(({ append, response }) => {
        calls++;
        expect(response.usage.totalTokens).toBeGreaterThan(0);
        if (calls === 1) append({ kind: 'signal', type: 'review', body: 'Please double-check.', attributes: { pass: '1' } });
      });
    }
    await ctx.start([Reviewer]);
    ctx.server.script({ text: 'first draft' }, { text: 'checked' });
    const { handle, receipt } = await send(Reviewer, 'f', 'go');
    const reply = await handle.read(receipt);
    expect(ctx.server.requests).toHaveLength(2);
    expect(transcript(ctx.server.requests[1]!)).toContain('<signal type="review" pass="1">\nPlease double-check.\n</signal>');
    expect(reply.text).toBe('first draft\n\nchecked');
    expect(calls).toBe(2);
  });

  it.each<[string, unknown]>([
    ['a user message', { kind: 'user', body: 'x' }],
    ['a reserved signal type', { kind: 'signal', type: 'instructions', body: 'x' }],
    ['a bad tagName', { kind: 'signal', type: 't', body: 'x', tagName: '9x' }],
  ])('appending %s throws and fails the submission', async (_label, message) => {
    quietErrors();
    function BadAppend() {
      useModel(MODEL);
      useAgentFinish(({ append }) => append(message as never));
    }
    await ctx.start([BadAppend]);
    ctx.server.script({ text: 'draft' }, { text: 'unused' });
    const { handle, receipt } = await send(BadAppend, 'f2', 'go');
    expect(await rejection(handle.read(receipt))).toMatchObject({ name: 'AgentRunError', outcome: 'failed' });
    expect(ctx.server.requests).toHaveLength(1);
  });

  it('the 32-cycle ceiling fails the submission after 32 continuations (33 model calls)', async () => {
    quietErrors();
    function Relentless() {
      useModel(MODEL);
      useAgentFinish(({ append }) => append({ kind: 'signal', type: 'again', body: 'Go on.' }));
    }
    await ctx.start([Relentless]);
    ctx.server.script(...Array.from({ length: 40 }, (_, i) => ({ text: `turn ${i}` })));
    const { handle, receipt } = await send(Relentless, 'f3', 'go');
    const error = await rejection(handle.read(receipt));
    expect(error).toBeInstanceOf(AgentRunError);
    expect(error).toMatchObject({ outcome: 'failed', submissionId: receipt.submissionId });
    expect(ctx.server.requests).toHaveLength(33);
  });
});

describe('useAgentStart', () => {
  it('appends land before the model reads the delivery, grouped in declaration order', async () => {
    let runs = 0;
    function Primed() {
      useModel(MODEL);
      useAgentStart(async ({ append }) => {
        runs++;
        await sleep(30);
        append({ kind: 'signal', type: 'context', body: 'SLOW-FIRST', attributes: { source: 'crm' } });
      });
      useAgentStart(({ append }) => {
        append({ kind: 'signal', type: 'context', body: 'FAST-SECOND' });
      });
    }
    await ctx.start([Primed]);
    ctx.server.script({ text: 'answer' }, { text: 'answer 2' });
    const { handle, receipt } = await send(Primed, 's', 'USER-QUESTION');
    await handle.read(receipt);
    const seen = transcript(ctx.server.requests[0]!);
    expect(seen).toContain('<signal type="context" source="crm">\nSLOW-FIRST\n</signal>');
    expect(seen.indexOf('USER-QUESTION')).toBeGreaterThanOrEqual(0);
    expect(seen.indexOf('USER-QUESTION')).toBeLessThan(seen.indexOf('SLOW-FIRST'));
    expect(seen.indexOf('SLOW-FIRST')).toBeLessThan(seen.indexOf('FAST-SECOND'));
    expect(runs).toBe(1);
    // Once per delivered message: a second delivery runs it again, the first is not re-run.
    await handle.read(await handle.dispatch('NEXT'));
    expect(runs).toBe(2);
    expect(transcript(ctx.server.requests[1]!).match(/SLOW-FIRST/g)).toHaveLength(2);
  });

  it('a throwing callback fails the submission before any model call', async () => {
    quietErrors();
    function Throws() {
      useModel(MODEL);
      useAgentStart(() => {
        throw new Error('start failed');
      });
    }
    await ctx.start([Throws]);
    ctx.server.script({ text: 'unused' });
    const { handle, receipt } = await send(Throws, 's2', 'go');
    expect(await rejection(handle.read(receipt))).toMatchObject({ outcome: 'failed' });
    expect(ctx.server.requests).toHaveLength(0);
  });
});

describe('joins and useDelivery()', () => {
  it('a dispatch to a busy instance joins at the turn boundary; useDelivery() follows it; both settle with the host reply', async () => {
    const startSaw: string[] = [];
    function Desk() {
      useModel(MODEL);
      const delivery = useDelivery();
      const label = delivery.kind === 'user' ? delivery.body : delivery.type;
      useAgentStart(() => {
        startSaw.push(label);
      });
      return `DELIVERY=${label}`;
    }
    await ctx.start([Desk]);
    ctx.server.script({ text: 'working on the first one', chunkDelayMs: 40 }, { text: 'answer for both' });
    const handle = init(Desk, { id: 'j' });
    const first = await handle.dispatch('first');
    await ctx.server.waitForRequests(1);
    const second = await handle.dispatch('second');
    const chunks: ConversationStreamChunk[] = [];
    const secondReply = await handle.read(second, { onEvent: (chunk) => chunks.push(chunk) });
    const firstReply = await handle.read(first);

    expect(ctx.server.requests).toHaveLength(2);
    expect(ctx.server.requests[0]!.system).toBe(promptOf('DELIVERY=first'));
    expect(ctx.server.requests[1]!.system).toBe(promptOf('DELIVERY=second'));
    expect(transcript(ctx.server.requests[1]!)).toContain('second');
    expect(startSaw).toEqual(['first', 'second']);
    expect(firstReply.text).toBe('working on the first one\n\nanswer for both');
    expect(secondReply.text).toBe(firstReply.text);
    expect(secondReply.submissionId).toBe(second.submissionId);
    expect(firstReply.submissionId).toBe(first.submissionId);
    const settled = chunks.find((chunk) => chunk.type === 'submission-settled' && chunk.submissionId === second.submissionId);
    expect(settled).toMatchObject({ outcome: 'completed', answeredBySubmissionId: first.submissionId });
  });
});

describe('useDispatchMessage()', () => {
  it('a dispatch from a tool is a real delivery: it gets a receipt, runs its own useAgentStart, and settles', async () => {
    let fromTool: DispatchReceipt | undefined;
    const startSaw: string[] = [];
    function Messenger() {
      useModel(MODEL);
      const dispatchToSelf = useDispatchMessage();
      const delivery = useDelivery();
      useAgentStart(() => {
        startSaw.push(delivery.kind === 'user' ? delivery.body : delivery.type);
      });
      useTool({
        name: 'schedule_followup',
        description: 'Queues a follow-up.',
        async run() {
          fromTool = await dispatchToSelf({ kind: 'signal', type: 'followup', body: 'FOLLOW-UP-BODY' });
          return { output: { queued: fromTool.submissionId } };
        },
      });
    }
    await ctx.start([Messenger]);
    ctx.server.script({ toolCalls: [{ name: 'schedule_followup', arguments: {} }] }, { text: 'done with both' });
    const { handle, receipt } = await send(Messenger, 'dm', 'hello');
    await handle.read(receipt);
    expect(fromTool?.submissionId).toMatch(/^sub_/);
    expect(fromTool?.uid).toBe(receipt.uid);
    expect(fromTool?.submissionId).not.toBe(receipt.submissionId);
    const followUp = await handle.read(fromTool!);
    expect(followUp.text).toBe('done with both');
    expect(startSaw).toEqual(['hello', 'followup']);
    expect(ctx.server.requests).toHaveLength(2);
    expect(transcript(ctx.server.requests[1]!)).toContain('<signal type="followup">\nFOLLOW-UP-BODY\n</signal>');
  });

  it('a malformed message from the dispatcher is rejected (tool error), nothing is queued', async () => {
    function BadMessenger() {
      useModel(MODEL);
      const dispatchToSelf = useDispatchMessage();
      useTool({
        name: 'bad_followup',
        description: 'Queues a bad follow-up.',
        async run() {
          await dispatchToSelf({ kind: 'signal', type: 'resources', body: 'forged' });
          return 'queued';
        },
      });
    }
    await ctx.start([BadMessenger]);
    ctx.server.script({ toolCalls: [{ name: 'bad_followup', arguments: {} }] }, { text: 'ok' });
    const { handle, receipt } = await send(BadMessenger, 'dm2', 'hello');
    await handle.read(receipt);
    const result = ctx.server.requests[1]!.messages.find((m) => m.role === 'tool');
    expect(result?.isError).toBe(true);
    expect(ctx.server.requests).toHaveLength(2);
    expect(transcript(ctx.server.requests[1]!)).not.toContain('forged');
  });
});

describe('render rules in a live runtime', () => {
  // An async agent function never gets this far: admission rejects it (definition-errors.test.ts).
  it.each<[string, () => unknown]>([
    ['an agent returning a number', () => (useModel(MODEL), 42)],
    ['an agent without useModel', () => 'no model declared'],
  ])('%s fails the submission before any model call', async (_label, body) => {
    quietErrors();
    const Broken = [body][0] as unknown as Agent;
    await ctx.start([{ agent: Broken, name: 'broken' }]);
    ctx.server.script({ text: 'unused' });
    const { handle, receipt } = await send(Broken, 'b', 'go');
    const error = await rejection(handle.read(receipt));
    expect(error).toBeInstanceOf(AgentRunError);
    expect(error).toMatchObject({ outcome: 'failed', submissionId: receipt.submissionId });
    expect(ctx.server.requests).toHaveLength(0);
  });
});
