/**
 * A harness is scoped to the tool call it was handed to (Tools seed, "运行时工具"): when the call
 * settles, times out or is aborted, in-flight `harness.prompt()` calls are aborted and later calls
 * reject with `HarnessClosedError`. Aborting a prompt — `abort()` or `options.signal` — rejects
 * with a standard `AbortError` DOMException carrying the reason as its `cause` (seed 004, CallHandle).
 * The workerd side is test/workers/harness-scope.test.ts.
 */
import { expect, test, vi } from 'vitest';
import * as v from 'valibot';
import {
  type FlueHarness,
  HarnessClosedError,
  type ShellResult,
  ToolTimeoutError,
  defineTool,
  init,
  useAgentStart,
  useModel,
  useSandbox,
  useTool,
  virtualSandbox,
} from '@flue/runtime';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

const ctx = useScriptedRuntime();

const SCRATCH_PROMPT = 'Review the clause in depth.';
const isScratch = (request: { messages: { content: string }[] }) => request.messages[0]?.content.includes(SCRATCH_PROMPT) === true;

let timedOutPrompt: Promise<unknown> | undefined;
let stashed: FlueHarness | undefined;
const later: { prompt?: unknown; compact?: unknown } = {};
let gate: { open(): void; opened: Promise<void> } | undefined;
const aborts: { via: string; error: unknown; reason: unknown; signalReason: unknown }[] = [];

function newGate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

const slowReview = defineTool({
  name: 'slow_review',
  description: 'Review the clause with a focused model operation.',
  harness: true,
  timeoutMs: 300,
  async run({ harness }) {
    const wait = defineTool({
      name: 'wait_for_records',
      description: 'Wait for the records to arrive.',
      async run() {
        await gate?.opened;
        return 'The records arrived.';
      },
    });
    const call = harness.prompt(SCRATCH_PROMPT, { tools: [wait] });
    timedOutPrompt = call.then(
      () => 'resolved',
      (error: unknown) => error,
    );
    return (await call).text;
  },
});

const stash = defineTool({
  name: 'stash',
  description: 'Keep the harness for later.',
  harness: true,
  run({ harness }) {
    stashed = harness;
    return 'kept';
  },
});

const reuse = defineTool({
  name: 'reuse',
  description: 'Use the harness kept by an earlier call.',
  async run() {
    later.prompt = await stashed!.prompt('Are you still there?').then(
      () => 'resolved',
      (error: unknown) => error,
    );
    later.compact = await stashed!.compact().then(
      () => 'resolved',
      (error: unknown) => error,
    );
    return 'tried';
  },
});

const abortProbe = defineTool({
  name: 'abort_probe',
  description: 'Start a prompt and abort it.',
  input: v.object({ via: v.picklist(['abort', 'signal']), reason: v.optional(v.string()) }),
  harness: true,
  async run({ harness, data }) {
    const controller = new AbortController();
    const before = ctx.server.requests.length;
    const call = harness.prompt('Think for a long time.', data.via === 'signal' ? { signal: controller.signal } : {});
    // Abort mid-flight: once the scratch conversation's model request reached the server.
    await ctx.server.waitForRequests(before + 1);
    const reason = data.reason === undefined ? undefined : new Error(data.reason);
    if (data.via === 'abort') call.abort(reason);
    else controller.abort(reason);
    const error = await call.then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    aborts.push({ via: data.via, error, reason, signalReason: call.signal.reason });
    return 'aborted';
  },
});

function Reviewer() {
  useModel('anthropic/claude-haiku-4-5');
  useTool(slowReview);
  useTool(stash);
  useTool(reuse);
  useTool(abortProbe);
  return 'Review clauses.';
}

test('a timed-out harness tool aborts its in-flight prompt: it rejects, and the scratch conversation makes no further model call', async () => {
  await ctx.start([Reviewer]);
  gate = newGate();
  ctx.server.script(
    { toolCalls: [{ name: 'slow_review', arguments: {} }] },
    // The scratch conversation waits on a tool that outlives the call's timeout.
    { toolCalls: [{ name: 'wait_for_records', arguments: {} }] },
    { text: 'The review timed out.' },
    // Only a scratch conversation still running after its call would consume this one first.
    { text: 'Still reviewing.' },
    { text: 'Second answer.' },
  );
  const handle = init(Reviewer, { id: 'scope-timeout' });
  const reply = await handle.read(await handle.dispatch('Review clause 7'));
  expect(reply.text).toBe('The review timed out.');
  const error = await timedOutPrompt;
  expect(error).toBeInstanceOf(DOMException);
  expect((error as DOMException).name).toBe('AbortError');
  expect((error as Error).cause).toBeInstanceOf(ToolTimeoutError);

  // The scratch tool finishes late; the closed scratch conversation must not go on to the model.
  gate.open();
  expect((await handle.read(await handle.dispatch('And clause 8?'))).text).toBe('Still reviewing.');
  expect(ctx.server.requests.filter(isScratch)).toHaveLength(1);
  expect(ctx.server.requests).toHaveLength(4);
});

test('a timed-out harness tool whose prompt hangs: the prompt rejects after the timeout and the response completes', async () => {
  await ctx.start([Reviewer]);
  ctx.server.script(
    { toolCalls: [{ name: 'slow_review', arguments: {} }] },
    { text: ['Looking'], hangAfterChunks: 3 },
    { text: 'The review timed out.' },
  );
  const handle = init(Reviewer, { id: 'scope-hang' });
  const reply = await handle.read(await handle.dispatch('Review clause 9'));
  expect(reply.text).toBe('The review timed out.');
  const error = await timedOutPrompt;
  expect((error as DOMException).name).toBe('AbortError');
  expect((error as Error).cause).toBeInstanceOf(ToolTimeoutError);
  expect(ctx.server.requests).toHaveLength(3);
  const toolResult = ctx.server.requests[2]!.messages.find((m) => m.role === 'tool')!;
  expect(toolResult.content).toContain('timed out after 300ms');
});

test('a harness kept past its tool call rejects later operations with HarnessClosedError and calls no model', async () => {
  await ctx.start([Reviewer]);
  ctx.server.script(
    { toolCalls: [{ name: 'stash', arguments: {} }] },
    { toolCalls: [{ name: 'reuse', arguments: {} }] },
    { text: 'Done.' },
  );
  const handle = init(Reviewer, { id: 'scope-stash' });
  expect((await handle.read(await handle.dispatch('Go'))).text).toBe('Done.');
  expect(later.prompt).toBeInstanceOf(HarnessClosedError);
  expect(later.prompt).toMatchObject({ type: 'harness_closed', meta: { operation: 'prompt' } });
  expect((later.prompt as Error).message).toBe('harness.prompt() was called after the harness closed.');
  expect(later.compact).toBeInstanceOf(HarnessClosedError);
  expect(later.compact).toMatchObject({ type: 'harness_closed', meta: { operation: 'compact' } });
  expect(ctx.server.requests).toHaveLength(3);
});

test('aborting harness.prompt() rejects with an AbortError DOMException whose cause is the reason, through abort() and options.signal', async () => {
  await ctx.start([Reviewer]);
  aborts.length = 0;
  const handle = init(Reviewer, { id: 'scope-abort' });
  const cases = [{ via: 'abort', reason: 'changed my mind' }, { via: 'abort' }, { via: 'signal', reason: 'user left' }, { via: 'signal' }];
  for (const args of cases) {
    ctx.server.script({ toolCalls: [{ name: 'abort_probe', arguments: args }] }, { text: ['Hmm'], hangAfterChunks: 2 }, { text: 'ok' });
    expect((await handle.read(await handle.dispatch('Probe'))).text).toBe('ok');
  }
  expect(aborts.map((a) => a.via)).toEqual(['abort', 'abort', 'signal', 'signal']);
  for (const { error, reason, signalReason } of aborts) {
    expect(error).toBeInstanceOf(DOMException);
    expect((error as DOMException).name).toBe('AbortError');
    // The cause is what aborted the call: the given reason, or the platform's default reason.
    expect((error as Error).cause).toBe(signalReason);
    if (reason !== undefined) expect((error as Error).cause).toBe(reason);
    else expect((signalReason as DOMException).name).toBe('AbortError');
  }
});

test('aborting harness.prompt() while its model is inside a bash tool call rejects at once with an AbortError whose cause is the reason', async () => {
  let hanging = false;
  // Cooperative like a real shell: the command ends when its signal aborts, rejecting with the reason.
  const hang = ({ signal }: { signal: AbortSignal }) => {
    hanging = true;
    return new Promise<ShellResult>((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
  };
  let seen: { error: unknown; signalReason: unknown } | undefined;
  const abortInBash = defineTool({
    name: 'abort_in_bash',
    description: 'Start a prompt whose model runs a command that never ends, and abort it meanwhile.',
    harness: true,
    async run({ harness }) {
      const call = harness.prompt('Run the long command.');
      await vi.waitFor(() => expect(hanging).toBe(true));
      call.abort('user-cancel');
      seen = {
        error: await call.then(
          () => undefined,
          (thrown: unknown) => thrown,
        ),
        signalReason: call.signal.reason,
      };
      return 'aborted';
    },
  });
  const box = virtualSandbox({ commands: { hang } });
  function Operator() {
    useModel('anthropic/claude-haiku-4-5');
    useSandbox(box);
    useTool(abortInBash);
    return 'Operate.';
  }
  await ctx.start([Operator]);
  ctx.server.script(
    { toolCalls: [{ name: 'abort_in_bash', arguments: {} }] },
    { toolCalls: [{ name: 'bash', arguments: { command: 'hang' } }] },
    { text: 'ok' },
  );
  const handle = init(Operator, { id: 'scope-bash-abort' });
  expect((await handle.read(await handle.dispatch('Probe'))).text).toBe('ok');
  expect(ctx.server.requests).toHaveLength(3);
  expect(seen!.error).toBeInstanceOf(DOMException);
  expect((seen!.error as DOMException).name).toBe('AbortError');
  expect((seen!.error as Error).cause).toBe('user-cancel');
  expect(seen!.signalReason).toBe('user-cancel');
});

test("a hook's harness closes when its callback ends: a tool that uses it later gets HarnessClosedError", async () => {
  function Greeter() {
    useModel('anthropic/claude-haiku-4-5');
    useAgentStart(({ harness }) => {
      stashed = harness;
    });
    useTool(reuse);
    return 'Greet.';
  }
  await ctx.start([Greeter]);
  later.prompt = undefined;
  ctx.server.script({ toolCalls: [{ name: 'reuse', arguments: {} }] }, { text: 'Hello.' });
  const handle = init(Greeter, { id: 'scope-hook' });
  expect((await handle.read(await handle.dispatch('Hi'))).text).toBe('Hello.');
  expect(later.prompt).toBeInstanceOf(HarnessClosedError);
  expect(ctx.server.requests).toHaveLength(2);
});
