/**
 * Crash scenarios through `crashHarness()` (@flue/runtime/testing): the runtime dies in-process at
 * a named point, restarts on the same SQLite file, and every submission must settle exactly once
 * with exact tool and step run counts. These mirror the SIGKILL child-process scenarios of
 * mid-work.test.ts and hooks-and-intents.test.ts (which prove real process death) at points a
 * kill cannot hit precisely: between a step's fn and its memo, just before a settlement commits.
 */
import * as v from 'valibot';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type DispatchReceipt,
  type FlueEvent,
  defineTool,
  dispatch,
  init,
  observe,
  useAgentFinish,
  useModel,
  useTool,
} from '@flue/runtime';
import {
  type CrashHarness,
  type RecordedRequest,
  type ScriptedModelServer,
  SimulatedCrashError,
  crashHarness,
  scriptedProvider,
  startScriptedModelServer,
} from '@flue/runtime/testing';
import { INTERRUPTED_MARKER, indexOf, messageOf } from './suite.ts';

// ── Agents under test ─────────────────────────────────────────────────────────────────────────

const MODEL = 'anthropic/claude-haiku-4-5';

/** What the tool bodies observed, in this process (the harness counts runs on its own). */
let shipped: string[] = [];

/** When set, lookup announces its start and waits for the test (it ignores its abort signal). */
let lookupGate: { started(): void; release: Promise<void> } | undefined;

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks a key up in an external system.',
  input: v.object({ key: v.string() }),
  async run({ data }) {
    if (lookupGate !== undefined) {
      lookupGate.started();
      await lookupGate.release;
    }
    return { output: { key: data.key, value: `value-of-${data.key}` } };
  },
});

const provision = defineTool({
  name: 'provision',
  description: 'Reserves, charges and ships one order.',
  input: v.object({ order: v.string() }),
  durable: true,
  async run({ data, step }) {
    const reservation = await step.do('reserve', () => `res-${data.order}`);
    const charge = await step.do('charge', () => `charge-${data.order}`);
    const shipment = await step.do('ship', () => {
      shipped.push(data.order);
      return `ship-${data.order}-${shipped.length}`;
    });
    return { output: { reservation, charge, shipment } };
  },
});

function StoryAgent() {
  useModel(MODEL);
  return 'You tell short stories.';
}

function FinishingAgent() {
  useModel(MODEL);
  useAgentFinish(() => {});
  return 'You tell short stories, then tidy up.';
}

function OpsAgent() {
  useModel(MODEL);
  useTool(lookup);
  useTool(provision);
  return 'You look things up and provision orders.';
}

// ── Set-up ────────────────────────────────────────────────────────────────────────────────────

let server: ScriptedModelServer;
let lab: CrashHarness | undefined;

beforeAll(async () => {
  server = await startScriptedModelServer();
});
afterAll(async () => {
  await server.close();
});
afterEach(async () => {
  await lab?.close();
  lab = undefined;
});

async function open(): Promise<CrashHarness> {
  server.reset();
  shipped = [];
  lookupGate = undefined;
  lab = await crashHarness({
    agents: [StoryAgent, FinishingAgent, OpsAgent],
    providers: [scriptedProvider({ baseUrl: server.url, id: 'anthropic', models: ['claude-haiku-4-5'], api: 'anthropic-messages' })],
    env: {},
  });
  return lab;
}

const SPARE = { text: 'spare step (unexpected extra model call)' };
/**
 * message_start, content_block_start, then a delta every 150 ms, and the stream stalls: the first
 * delta arrives more than 250 ms after the request, past the followed schedule's first flush.
 */
const STALLING_STORY = { text: ['Once ', 'upon ', 'a ', 'time'], chunkDelayMs: 150, hangAfterChunks: 5 };

/**
 * Reads the reply as a client showing it live would (`onEvent`), so the stream is committed on the
 * followed schedule; the crash ends this read, which is not awaited.
 */
function follow(handle: { read: ReturnType<typeof init>['read'] }, receipt: DispatchReceipt): void {
  handle.read(receipt, { onEvent: () => {} }).catch(() => {});
}

function toolResult(request: RecordedRequest, toolCallId: string) {
  return messageOf(request, (m) => m.role === 'tool' && m.toolCallId === toolCallId, `the tool result for ${toolCallId}`);
}

// ── Scenarios ─────────────────────────────────────────────────────────────────────────────────

describe('crashHarness: every named point, settled exactly once', () => {
  it('after admission: dispatch dies with the crash, a keyed retry after restart converges, delivered once', async () => {
    const lab = await open();
    server.script({ text: 'Once upon a time.' }, SPARE);
    lab.crashAt({ point: 'admission', agent: StoryAgent });
    const keyed = { id: 'adm', message: 'Tell me a story.', idempotencyKey: 'story-1' };

    // The caller never saw a receipt: the process died right after the submission was stored.
    await expect(dispatch(StoryAgent, keyed)).rejects.toBeInstanceOf(SimulatedCrashError);
    const crash = await lab.crashed;
    expect(crash).toMatchObject({ point: 'admission', agent: 'StoryAgent', instanceId: 'adm', crash: 1 });
    expect(lab.up).toBe(false);
    expect(lab.report().submissions).toEqual([
      // Admitted to an idle conversation, so stored with its first attempt claimed.
      { id: crash.submissionId, agent: 'StoryAgent', instanceId: 'adm', outcome: null, settlements: 0, attempts: 1 },
    ]);

    await lab.restart();
    const receipt = await dispatch(StoryAgent, keyed);
    expect(receipt).toMatchObject({ submissionId: crash.submissionId, deduplicated: true });
    expect((await init(StoryAgent, { id: 'adm' }).read(receipt)).text).toBe('Once upon a time.');

    const report = await lab.settle();
    expect(report.submissions).toEqual([
      // The claimed attempt the crash ended counts, as any other: the restart runs the second.
      { id: crash.submissionId, agent: 'StoryAgent', instanceId: 'adm', outcome: 'completed', settlements: 1, attempts: 2 },
    ]);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.messages.filter((m) => m.role === 'user')).toHaveLength(1);
  });

  it('mid model stream: the committed partial is converged and continued, a second dispatch is not lost', async () => {
    const lab = await open();
    // Followed, the stream's first delta is committed at once, before the point fires.
    server.script(STALLING_STORY, { text: 'a fox who outlived a crash.' }, SPARE);
    lab.crashAt({ point: 'model' });
    const handle = init(StoryAgent, { id: 'story' });
    const first = await handle.dispatch('Tell me a story.');
    follow(handle, first);
    const second = await handle.dispatch('And another one.');
    expect(await lab.crashed).toMatchObject({ point: 'model', submissionId: first.submissionId });

    const recoveries: FlueEvent[] = [];
    const unobserve = observe((event) => {
      if (event.type === 'submission_recovery') recoveries.push(event);
    });
    await lab.restart();
    const reply = await init(StoryAgent, { id: 'story' }).read(second).finally(unobserve);
    expect(reply.text).toContain('a fox who outlived a crash.');
    // The attempt the crash ended is replaced, and observers are told so.
    expect(recoveries).toEqual([
      expect.objectContaining({
        submissionId: first.submissionId,
        operation: 'reconcile_submission',
        outcome: 'deferred',
        attemptCount: 1,
      }),
    ]);

    const report = await lab.settle();
    expect(report.submissions.map((s) => [s.id, s.outcome, s.settlements])).toEqual([
      [first.submissionId, 'completed', 1],
      [second.submissionId, 'completed', 1],
    ]);
    expect(report.submissions[0]!.attempts).toBe(2);
    expect(server.requests).toHaveLength(2);
    const retry = server.requests[1]!;
    const order = [
      indexOf(retry, (m) => m.role === 'user' && m.content === 'Tell me a story.', 'the first user message'),
      indexOf(retry, (m) => m.role === 'assistant' && m.content.startsWith('Once '), 'the committed partial'),
      indexOf(retry, (m) => m.role === 'user' && m.content.includes('type="stream_interrupted"'), 'the stream_interrupted signal'),
    ];
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    // The second delivery (joined at the first turn boundary) reached the model exactly once.
    expect(retry.messages.filter((m) => m.role === 'user' && m.content.includes('And another one.'))).toHaveLength(1);
  });

  it('mid model stream with nobody following: nothing of it was committed, not even its message; the recovery applies the message once and asks the model afresh', async () => {
    const lab = await open();
    server.script(STALLING_STORY, { text: 'a fox who outlived a crash.' }, SPARE);
    lab.crashAt({ point: 'model' });
    const first = await init(StoryAgent, { id: 'quiet' }).dispatch('Tell me a story.');
    expect(await lab.crashed).toMatchObject({ point: 'model', submissionId: first.submissionId });
    await lab.restart();

    const report = await lab.settle();
    expect(report.submissions.map((s) => [s.outcome, s.settlements, s.attempts])).toEqual([['completed', 1, 2]]);
    // The model is asked as if the interrupted call had never been made: no partial, no signals.
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1]!.messages).toEqual([expect.objectContaining({ role: 'user', content: 'Tell me a story.' })]);
    expect((await init(StoryAgent, { id: 'quiet' }).read(first)).text).toBe('a fox who outlived a crash.');
  });

  it('the n-th model call: a crash in the second model call of a tool loop keeps the tool result', async () => {
    const lab = await open();
    server.script(
      { text: 'Let me check.', toolCalls: [{ id: 'call_lookup_n', name: 'lookup', arguments: { key: 'k1' } }] },
      { text: ['k1 is ', 'value-of-k1.'], chunkDelayMs: 150, hangAfterChunks: 4 },
      { text: 'k1 is value-of-k1.' },
      SPARE,
    );
    lab.crashAt({ point: 'model', agent: OpsAgent, nth: 2 });
    const receipt = await dispatch(OpsAgent, { id: 'nth', message: 'What is k1?' });
    expect(await lab.crashed).toMatchObject({ point: 'model', agent: 'OpsAgent', submissionId: receipt.submissionId });
    await lab.restart();
    const report = await lab.settle();
    expect(report.submissions.map((s) => [s.outcome, s.settlements])).toEqual([['completed', 1]]);
    expect(report.toolRuns).toEqual({ lookup: 1 });
    expect((await init(OpsAgent, { id: 'nth' }).read(receipt)).text).toContain('k1 is value-of-k1.');
    expect(JSON.parse(toolResult(server.requests[2]!, 'call_lookup_n').content)).toEqual({ key: 'k1', value: 'value-of-k1' });
  });

  it('inside an ordinary tool: not run again; the model gets the unknown-outcome marker', async () => {
    const lab = await open();
    server.script(
      { text: 'Let me look that up.', toolCalls: [{ id: 'call_lookup_1', name: 'lookup', arguments: { key: 'k1' } }] },
      { text: 'The lookup was interrupted, so I cannot say.' },
      SPARE,
    );
    lab.crashAt({ point: 'tool', name: 'lookup' });
    const receipt = await dispatch(OpsAgent, { id: 'ops', message: 'What is k1?' });
    expect(await lab.crashed).toMatchObject({
      point: 'tool',
      tool: 'lookup',
      toolCallId: 'call_lookup_1',
      submissionId: receipt.submissionId,
    });
    await lab.restart();

    const report = await lab.settle();
    expect(report.submissions.map((s) => [s.outcome, s.settlements, s.attempts])).toEqual([['completed', 1, 2]]);
    expect(report.toolRuns).toEqual({ lookup: 1 });
    expect(server.requests).toHaveLength(2);
    expect(toolResult(server.requests[1]!, 'call_lookup_1')).toMatchObject({ content: INTERRUPTED_MARKER, isError: true });
    expect((await init(OpsAgent, { id: 'ops' }).read(receipt)).text).toContain('The lookup was interrupted');
  });

  it('inside a durable tool: it runs again from the top, each step once', async () => {
    const lab = await open();
    server.script(
      { toolCalls: [{ id: 'call_prov_1', name: 'provision', arguments: { order: 'o1' } }] },
      { text: 'Order o1 is provisioned.' },
      SPARE,
    );
    lab.crashAt({ point: 'tool', name: 'provision' });
    await dispatch(OpsAgent, { id: 'prov-tool', message: 'Provision order o1.' });
    await lab.crashed;
    await lab.restart();

    const report = await lab.settle();
    expect(report.submissions.map((s) => [s.outcome, s.settlements])).toEqual([['completed', 1]]);
    expect(report.toolRuns).toEqual({ provision: 2 });
    expect(report.stepRuns).toEqual({ 'provision/reserve': 1, 'provision/charge': 1, 'provision/ship': 1 });
    expect(JSON.parse(toolResult(server.requests[1]!, 'call_prov_1').content)).toEqual({
      reservation: 'res-o1',
      charge: 'charge-o1',
      shipment: 'ship-o1-1',
    });
  });

  it('between step.do fn and its memo: finished steps replay, the interrupted step runs again', async () => {
    const lab = await open();
    server.script(
      { toolCalls: [{ id: 'call_prov_2', name: 'provision', arguments: { order: 'o2' } }] },
      { text: 'Order o2 is provisioned.' },
      SPARE,
    );
    lab.crashAt({ point: 'step', tool: 'provision', name: 'ship' });
    const receipt = await dispatch(OpsAgent, { id: 'prov-step', message: 'Provision order o2.' });
    expect(await lab.crashed).toMatchObject({ point: 'step', tool: 'provision', step: 'ship', toolCallId: 'call_prov_2' });
    await lab.restart();

    const report = await lab.settle();
    expect(report.submissions.map((s) => [s.outcome, s.settlements, s.attempts])).toEqual([['completed', 1, 2]]);
    expect(report.toolRuns).toEqual({ provision: 2 });
    expect(report.stepRuns).toEqual({ 'provision/reserve': 1, 'provision/charge': 1, 'provision/ship': 2 });
    // The ship fn ran twice (the at-least-once window); the recorded value is the second run's.
    expect(shipped).toEqual(['o2', 'o2']);
    const result = toolResult(server.requests[1]!, 'call_prov_2');
    expect(result.isError).toBe(false);
    expect(JSON.parse(result.content)).toEqual({ reservation: 'res-o2', charge: 'charge-o2', shipment: 'ship-o2-2' });
    expect((await init(OpsAgent, { id: 'prov-step' }).read(receipt)).text).toBe('Order o2 is provisioned.');
  });

  it('the same step interrupted in two attempts: a crash during recovery is recovered too', async () => {
    const lab = await open();
    server.script(
      { toolCalls: [{ id: 'call_prov_3', name: 'provision', arguments: { order: 'o3' } }] },
      { text: 'Order o3 is provisioned.' },
      SPARE,
    );
    lab.crashAt({ point: 'step', tool: 'provision', name: 'ship' });
    await dispatch(OpsAgent, { id: 'prov-twice', message: 'Provision order o3.' });
    await lab.crashed;
    // Armed while down: the restart's recovery reaches the same point and dies there again.
    lab.crashAt({ point: 'step', tool: 'provision', name: 'ship' });
    await lab.restart();
    expect(await lab.crashed).toMatchObject({ point: 'step', crash: 2 });
    await lab.restart();

    const report = await lab.settle();
    expect(report.crashes.map((c) => c.crash)).toEqual([1, 2]);
    expect(report.submissions.map((s) => [s.outcome, s.settlements, s.attempts])).toEqual([['completed', 1, 3]]);
    expect(report.toolRuns).toEqual({ provision: 3 });
    expect(report.stepRuns).toEqual({ 'provision/reserve': 1, 'provision/charge': 1, 'provision/ship': 3 });
    expect(server.requests).toHaveLength(2);
  });

  it('two conversations at once: one dies mid-stream, the other mid-tool; one restart recovers both', async () => {
    const lab = await open();
    // Both lanes call the model concurrently, so each step answers by looking at the request.
    const route = (request: RecordedRequest) => {
      const ops = request.system?.includes('provision orders') === true;
      const recovered = request.messages.length > 1;
      if (ops)
        return recovered ? { text: 'beta recovered.' } : { toolCalls: [{ id: 'call_beta', name: 'lookup', arguments: { key: 'kb' } }] };
      return recovered ? { text: 'alpha recovered.' } : { text: ['Alpha ', 'was ', 'saying'], chunkDelayMs: 150, hangAfterChunks: 4 };
    };
    server.script(route, route, route, route, SPARE);
    let release!: () => void;
    const started = new Promise<void>((resolveStarted) => {
      lookupGate = { started: resolveStarted, release: new Promise<void>((resolveRelease) => (release = resolveRelease)) };
    });
    lab.crashAt({ point: 'model', agent: StoryAgent });
    const beta = await dispatch(OpsAgent, { id: 'beta', message: 'Beta, look up kb.' });
    await started; // beta's tool is in flight
    const alpha = await dispatch(StoryAgent, { id: 'alpha', message: 'Alpha, speak.' });
    follow(init(StoryAgent, { id: 'alpha' }), alpha);
    expect(await lab.crashed).toMatchObject({ agent: 'StoryAgent', instanceId: 'alpha' });
    lookupGate = undefined;
    release(); // the dead runtime's tool body finishes; nothing it returns is stored
    await lab.restart();

    const report = await lab.settle();
    expect(report.submissions.map((s) => [s.id, s.outcome, s.settlements])).toEqual([
      [beta.submissionId, 'completed', 1],
      [alpha.submissionId, 'completed', 1],
    ]);
    expect(report.toolRuns).toEqual({ lookup: 1 });
    expect((await init(StoryAgent, { id: 'alpha' }).read(alpha)).text).toContain('alpha recovered.');
    expect((await init(OpsAgent, { id: 'beta' }).read(beta)).text).toBe('beta recovered.');
    const betaRetry = server.requests.find((r) => r.system?.includes('provision orders') && r.messages.length > 1)!;
    expect(toolResult(betaRetry, 'call_beta')).toMatchObject({ content: INTERRUPTED_MARKER, isError: true });
    expect(server.requests).toHaveLength(4);
  });

  it('during settlement, after a finish hook: the reply is not asked for again, the submission settles once', async () => {
    const lab = await open();
    server.script({ text: 'Short and sweet.' }, SPARE);
    lab.crashAt({ point: 'settlement' });
    const receipt = await dispatch(FinishingAgent, { id: 'settle', message: 'Say something.' });
    expect(await lab.crashed).toMatchObject({ point: 'settlement', submissionId: receipt.submissionId });
    expect(lab.report().submissions.map((s) => [s.outcome, s.settlements])).toEqual([[null, 0]]);
    await lab.restart();

    const report = await lab.settle();
    expect(report.submissions.map((s) => [s.outcome, s.settlements, s.attempts])).toEqual([['completed', 1, 2]]);
    expect(server.requests).toHaveLength(1);
    expect((await init(FinishingAgent, { id: 'settle' }).read(receipt)).text).toBe('Short and sweet.');
  });

  it('during settlement of a response that ends with its last model call: that call repeats, the submission settles once', async () => {
    const lab = await open();
    server.script({ text: 'First telling.' }, { text: 'Second telling.' }, SPARE);
    lab.crashAt({ point: 'settlement' });
    const receipt = await dispatch(StoryAgent, { id: 'settle-last', message: 'Say something.' });
    expect(await lab.crashed).toMatchObject({ point: 'settlement', submissionId: receipt.submissionId });
    await lab.restart();

    const report = await lab.settle();
    expect(report.submissions.map((s) => [s.outcome, s.settlements, s.attempts])).toEqual([['completed', 1, 2]]);
    // The step and the settlement were one write: neither was stored, so the model is asked again.
    expect(server.requests).toHaveLength(2);
    expect((await init(StoryAgent, { id: 'settle-last' }).read(receipt)).text).toBe('Second telling.');
  });
});
