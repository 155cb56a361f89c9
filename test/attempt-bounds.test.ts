/**
 * No attempt hangs forever (durability.md, "Hung calls"): the submission's `timeoutMs` ends an
 * attempt that is still waiting on a model call or a tool, and a model stream idle for
 * `modelIdleTimeoutMs` abandons its attempt, which counts against `maxAttempts`. Through the
 * public API on Node, against a scripted model server that hangs the way real providers do.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  AgentRunError,
  type FlueEvent,
  type SandboxFactory,
  defineSubagent,
  defineTool,
  init,
  observe,
  useModel,
  useSandbox,
  useSubagent,
  useTool,
  virtualSandbox,
} from '@flue/runtime';
import { type Flue, sqlite, start } from '@flue/runtime/node';
import { type RecordedRequest, type ScriptedModelServer, type ScriptedResponse, startScriptedModelServer } from '@flue/runtime/testing';
import { seedProviders } from './support/scripted-runtime.ts';

const MODEL = 'anthropic/claude-haiku-4-5';
const BOUNDS = { timeoutMs: 3000, maxAttempts: 2 };
/** Generous slack over the deadline for a loaded machine; the original runtime takes 12–17 s. */
const SETTLE_WITHIN_MS = BOUNDS.timeoutMs + 4000;

/** Each conversation's requests are answered by what its first user message asks for. */
function reply(request: RecordedRequest): ScriptedResponse | Promise<ScriptedResponse> {
  const first = request.messages.find((message) => message.role === 'user')?.content ?? '';
  const toolAnswered = request.messages.some((message) => message.role === 'tool');
  switch (first) {
    case 'silent':
      return new Promise<never>(() => {}); // accepts the request and never answers
    case 'stall':
    case 'idle':
      return { text: ['Working', ' on', ' it'], hangAfterChunks: 3 }; // stalls mid-stream
    case 'tool':
    case 'rest':
      return toolAnswered ? { text: 'Back at rest.' } : { toolCalls: [{ name: 'wait_forever', arguments: {} }] };
    case 'sandbox':
      return toolAnswered ? { text: 'unexpected' } : { toolCalls: [{ name: 'bash', arguments: { command: 'make' } }] };
    case 'delegate':
      return toolAnswered ? { text: 'Parent done.' } : { toolCalls: [{ name: 'task', arguments: { agent: 'digger', prompt: 'dig' } }] };
    case 'dig': // the delegate: its first stream stalls, the recovered one answers
      return request.messages.some((message) => message.content.includes('interrupted'))
        ? { text: 'Found it.' }
        : { text: ['Dig', 'ging'], hangAfterChunks: 3 };
    default:
      return { text: `unscripted request: ${first}` };
  }
}

const waitForever = defineTool({
  name: 'wait_forever',
  description: 'Never returns, and ignores its abort signal.',
  run: () => new Promise<string>(() => {}),
});

/** A sandbox whose shell never answers and ignores its abort signal. */
const stuckShell: SandboxFactory = {
  async createSandbox(options) {
    const sandbox = await virtualSandbox().createSandbox(options);
    return new Proxy(sandbox, { get: (target, key) => (key === 'exec' ? () => new Promise<never>(() => {}) : Reflect.get(target, key)) });
  },
};

function Bounded() {
  useModel(MODEL);
  useTool(waitForever);
  return 'Answer.';
}
Bounded.durability = BOUNDS;

function Builder() {
  useModel(MODEL);
  useSandbox(stuckShell);
  return 'Build it.';
}
Builder.durability = BOUNDS;

function Impatient() {
  useModel(MODEL);
  return 'Answer.';
}
Impatient.durability = { ...BOUNDS, timeoutMs: 60_000, modelIdleTimeoutMs: 300 };

const digger = defineSubagent({ name: 'digger', description: 'Digs.', agent: () => 'You dig.' });

function Delegator() {
  useModel(MODEL);
  useSubagent(digger);
  return 'Delegate the digging.';
}
Delegator.durability = Impatient.durability;

let server: ScriptedModelServer;
let flue: Flue;
beforeAll(async () => {
  vi.spyOn(console, 'warn').mockImplementation(() => {});
  vi.spyOn(console, 'error').mockImplementation(() => {});
  server = await startScriptedModelServer({ fallback: reply });
  flue = await start({ agents: [Bounded, Builder, Impatient, Delegator], db: sqlite(), providers: seedProviders(server), env: {} });
});
afterAll(async () => {
  await flue.stop({ graceMs: 0 });
  await server.close();
  vi.restoreAllMocks();
});

async function settleFailure(agent: typeof Bounded | typeof Builder, id: string, message: string) {
  const handle = init(agent, { id });
  const started = Date.now();
  const receipt = await handle.dispatch(message);
  const error = await handle.read(receipt).then(
    () => undefined,
    (failure: unknown) => failure,
  );
  return { error: error as AgentRunError, elapsed: Date.now() - started, receipt };
}

function requestsOf(first: string): RecordedRequest[] {
  return server.requests.filter((request) => request.messages.find((message) => message.role === 'user')?.content === first);
}

describe.concurrent('durability.timeoutMs ends an attempt that is still running', () => {
  it.each([
    ['a model server that accepts and never answers', 'silent', 1],
    ['a model stream that stalls mid-stream', 'stall', 1],
    ['a tool that never returns and ignores its signal', 'tool', 1],
    ['a sandbox command that never answers and ignores its signal', 'sandbox', 1],
  ])('%s: settles failed with submission_timeout at the deadline', async (_case, message, modelCalls) => {
    const { error, elapsed, receipt } = await settleFailure(message === 'sandbox' ? Builder : Bounded, `timeout-${message}`, message);
    expect(error).toBeInstanceOf(AgentRunError);
    expect(error).toMatchObject({ outcome: 'failed', submissionId: receipt.submissionId });
    expect(error.cause).toMatchObject({ type: 'submission_timeout' });
    expect(elapsed).toBeGreaterThanOrEqual(BOUNDS.timeoutMs - 50);
    expect(elapsed).toBeLessThan(SETTLE_WITHIN_MS);
    // The deadline ended the attempt: no further attempt asked the model again.
    expect(requestsOf(message)).toHaveLength(modelCalls);
  });

  it('after a tool timed out the conversation is at rest: the next message runs, and the model sees the interrupted call', async () => {
    await settleFailure(Bounded, 'after-timeout', 'rest');
    const handle = init(Bounded, { id: 'after-timeout' });
    expect((await handle.read(await handle.dispatch('again'))).text).toBe('Back at rest.');
    const next = requestsOf('rest').filter((request) => request.messages.some((message) => message.content === 'again'));
    expect(next).toHaveLength(1);
    expect(next[0]!.messages.some((message) => message.role === 'tool')).toBe(true);
  });

  it('a stream idle for modelIdleTimeoutMs abandons the attempt; the next attempt is told it was interrupted, and the budget settles it', async () => {
    const recoveries: FlueEvent[] = [];
    const stop = observe((event) => {
      if (event.type === 'submission_recovery' && event.instanceId === 'idle') recoveries.push(event);
    });
    const { error, elapsed, receipt } = await settleFailure(Impatient, 'idle', 'idle').finally(stop);
    // Each abandoned attempt is a contained failure, the second attempt a replacement, and the
    // budget's give-up a durable termination: observers see each one.
    expect(recoveries.map((e) => [e.operation, e.outcome, e.attemptCount])).toEqual([
      ['process_submission', 'deferred', 1],
      ['reconcile_submission', 'deferred', 1],
      ['process_submission', 'deferred', 2],
      ['reconcile_submission', 'terminated', 2],
    ]);
    expect(recoveries[0]).toMatchObject({
      submissionId: receipt.submissionId,
      kind: 'dispatch',
      maxAttempts: 2,
      error: { name: 'AttemptStalled', message: expect.stringContaining('delivered nothing for 300 ms') },
      errorInfo: { type: 'AttemptStalled' },
    });
    expect(error).toBeInstanceOf(AgentRunError);
    expect(error).toMatchObject({ outcome: 'failed', submissionId: receipt.submissionId });
    expect(error.cause).toMatchObject({ type: 'submission_retry_exhausted', meta: { attemptCount: 2, maxAttempts: 2 } });
    expect(elapsed).toBeLessThan(SETTLE_WITHIN_MS);
    const calls = requestsOf('idle');
    expect(calls).toHaveLength(2);
    // What the first attempt streamed was kept, and the second attempt continued from it.
    expect(calls[1]!.messages.map((message) => [message.role, message.content])).toEqual([
      ['user', 'idle'],
      ['assistant', 'Working'],
      ['user', '<signal type="stream_interrupted">\nYour previous response was interrupted before it completed.\n</signal>'],
      ['user', '<signal type="stream_continued">\nContinue from where the interrupted response stopped.\n</signal>'],
    ]);
  });

  it("a delegate's stalled stream abandons the parent's attempt; the next attempt resumes the child, which answers", async () => {
    const handle = init(Delegator, { id: 'delegate' });
    const reply = await handle.read(await handle.dispatch('delegate'));
    expect(reply.text).toBe('Parent done.');
    expect(requestsOf('dig')).toHaveLength(2);
    const parent = requestsOf('delegate');
    expect(parent).toHaveLength(2);
    expect(parent[1]!.messages.find((message) => message.role === 'tool')?.content).toBe('Found it.');
  });
});
