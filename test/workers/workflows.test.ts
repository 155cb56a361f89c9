/**
 * Agents driven from Cloudflare Workflows in real workerd (workflows-and-schedules.md §1–§4): the
 * receipt and the settled reply are step results; a retried dispatch step converges on one
 * submission; a retried read step re-attaches; a failed run fails the Workflow with its outcome.
 */
import { introspectWorkflowInstance, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { env, type WorkflowStep } from 'cloudflare:workers';
import { afterEach, expect, test } from 'vitest';
import { init } from '@flue/runtime';
import { runAgentStep, toAgentStepError, type AgentCheckpoint, type AgentStepReply, type AgentStepResult } from '@flue/runtime/workflows';
import { laneRequests, resetLane, scriptLane, until } from './lanes.ts';
import {
  FLOW_LANE,
  Flow,
  SLOW_FLOW_LANE,
  SlowFlow,
  injectFault,
  slowFlowRuns,
  stepAttempts,
  stepResults,
  type AgentFlowParams,
} from './workflows.ts';
import './worker.ts';

interface Bindings {
  AGENT_FLOW: Workflow<AgentFlowParams>;
  PLAIN_INIT_FLOW: Workflow<{ agentId: string; message: string }>;
  CONVERSATION_FLOW: Workflow<{ agentId: string }>;
  FLUE_FLOW_AGENT: DurableObjectNamespace;
  FLUE_SLOW_FLOW_AGENT: DurableObjectNamespace;
}
const bindings = env as unknown as Bindings;

type Introspector = Awaited<ReturnType<typeof introspectWorkflowInstance>>;

/** Runs `body` with an introspector on `id` whose retry delays and sleeps are off; disposes it. */
async function withInstance<T>(workflow: Workflow, id: string, body: (instance: Introspector) => Promise<T>): Promise<T> {
  const instance = await introspectWorkflowInstance(workflow, id);
  try {
    await instance.modify(async (m) => {
      await m.disableRetryDelays();
      await m.disableSleeps();
    });
    return await body(instance);
  } finally {
    await instance.dispose();
  }
}

function rows(namespace: DurableObjectNamespace, id: string, sql: string) {
  return runInDurableObject(namespace.getByName(id), (_instance, state) => state.storage.sql.exec(sql).toArray());
}

afterEach(async () => {
  await resetLane(FLOW_LANE);
  await resetLane(SLOW_FLOW_LANE);
});

test('a Workflow dispatches in one step, reads the settled reply in another and returns it', async () => {
  await scriptLane(FLOW_LANE, { text: 'Hello from the agent.' });
  const output = await withInstance(bindings.AGENT_FLOW, 'wf-basic', async (instance) => {
    await bindings.AGENT_FLOW.create({ id: 'wf-basic', params: { agent: 'Flow', agentId: 'wf-basic-agent', message: 'Say hello.' } });
    // The dispatch step's result is the checkpoint: plain JSON, everything the read step needs.
    const checkpoint = (await instance.waitForStepResult({ name: 'ask:dispatch' })) as AgentCheckpoint;
    expect(JSON.parse(JSON.stringify(checkpoint))).toEqual(checkpoint);
    expect(checkpoint).toEqual({
      name: 'ask',
      id: 'wf-basic-agent',
      receipt: { submissionId: expect.stringMatching(/^sub_/), acceptedAt: expect.any(String), uid: expect.any(String) },
    });
    await instance.waitForStatus('complete');
    return (await instance.getOutput()) as AgentStepResult<AgentStepReply>;
  });
  expect(output.outcome).toBe('completed');
  if (output.outcome !== 'completed') return;
  expect(output.reply).toEqual({
    text: 'Hello from the agent.',
    data: {},
    uid: output.checkpoint.receipt.uid,
    submissionId: output.checkpoint.receipt.submissionId,
  });
  // Keyed by the Workflow instance id and the step name, derived by the helper.
  expect(
    await rows(bindings.FLUE_FLOW_AGENT, 'wf-basic-agent', `SELECT json_extract(payload, '$.idempotencyKey') AS k FROM flue_submissions`),
  ).toEqual([{ k: 'wf-basic:ask' }]);
  // The read step checkpointed exactly the default projection.
  expect(output.reply).toEqual(await init(Flow, { id: 'wf-basic-agent' }).read(output.checkpoint.receipt));
});

test('plain init() and the handle verbs inside step.do keep working', async () => {
  await scriptLane(FLOW_LANE, { text: 'Plain and simple.' });
  const output = await withInstance(bindings.PLAIN_INIT_FLOW, 'wf-plain', async (instance) => {
    await bindings.PLAIN_INIT_FLOW.create({ id: 'wf-plain', params: { agentId: 'wf-plain-agent', message: 'Keep it plain.' } });
    await instance.waitForStatus('complete');
    return (await instance.getOutput()) as { text: string; submissionId: string };
  });
  expect(output.text).toBe('Plain and simple.');
  expect(
    await rows(
      bindings.FLUE_FLOW_AGENT,
      'wf-plain-agent',
      `SELECT id, json_extract(payload, '$.idempotencyKey') AS k FROM flue_submissions`,
    ),
  ).toEqual([{ id: output.submissionId, k: 'wf-plain:plain' }]);
});

test('a dispatch step retried after a successful admission does not deliver the message twice', async () => {
  await scriptLane(FLOW_LANE, { text: 'Said once.' });
  // Attempt 1 admits the message, then dies before its result is checkpointed.
  injectFault('wf-dispatch-retry', 'ask:dispatch', { kind: 'fail-after-body' });
  const output = await withInstance(bindings.AGENT_FLOW, 'wf-dispatch-retry', async (instance) => {
    await bindings.AGENT_FLOW.create({
      id: 'wf-dispatch-retry',
      params: { agent: 'Flow', agentId: 'wf-retry-agent', message: 'Say it once.' },
    });
    await instance.waitForStatus('complete');
    return (await instance.getOutput()) as AgentStepResult<AgentStepReply>;
  });
  expect(stepAttempts.get('wf-dispatch-retry/ask:dispatch')).toBe(2);
  const [first, second] = stepResults.get('wf-dispatch-retry/ask:dispatch') as AgentCheckpoint[];
  // The retry converged on the first attempt's submission: same id, flagged as a replay.
  expect(first!.receipt.deduplicated).toBeUndefined();
  expect(second!.receipt).toEqual({ ...first!.receipt, deduplicated: true });
  expect(output.checkpoint).toEqual(second);
  expect(output.outcome === 'completed' && output.reply.text).toBe('Said once.');
  expect(await rows(bindings.FLUE_FLOW_AGENT, 'wf-retry-agent', 'SELECT id, status FROM flue_submissions')).toEqual([
    { id: first!.receipt.submissionId, status: 'settled' },
  ]);
  expect(await laneRequests(FLOW_LANE)).toHaveLength(1);
});

test('a read step retried after its first attempt died with the object reset gets the same settled reply', async () => {
  slowFlowRuns.length = 0;
  await scriptLane(SLOW_FLOW_LANE, { toolCalls: [{ name: 'prepare', arguments: { order: 'o-7' } }] }, { text: 'Order o-7 is ready.' });
  let killRead!: () => void;
  injectFault('wf-read-retry', 'ask:read', { kind: 'fail-when', until: new Promise<void>((resolve) => (killRead = resolve)) });
  const stub = () => bindings.FLUE_SLOW_FLOW_AGENT.getByName('wf-read-agent');
  const output = await withInstance(bindings.AGENT_FLOW, 'wf-read-retry', async (instance) => {
    await bindings.AGENT_FLOW.create({
      id: 'wf-read-retry',
      params: { agent: 'SlowFlow', agentId: 'wf-read-agent', message: 'Prepare order o-7.' },
    });
    // Reset the object mid-response (while the slow `pack` step runs), and let the read attempt die with it.
    await until(() => (slowFlowRuns.includes('pack') ? true : undefined), 20_000);
    await runInDurableObject(stub(), (_instance, state) => {
      try {
        state.abort('test reset');
      } catch {
        // abort() throws in the calling context by design
      }
    }).catch(() => {});
    killRead();
    // The backstop alarm would fire in 30 s; run it now.
    await until(async () => ((await runDurableObjectAlarm(stub())) ? true : undefined), 20_000);
    await instance.waitForStatus('complete');
    return (await instance.getOutput()) as AgentStepResult<AgentStepReply>;
  });
  expect(output.outcome).toBe('completed');
  if (output.outcome !== 'completed') return;
  expect(stepAttempts.get('wf-read-retry/ask:read')).toBe(2);
  expect(stepAttempts.get('wf-read-retry/ask:dispatch')).toBe(1);
  expect(output.reply.text).toBe('Order o-7 is ready.');
  // The same settled reply any later read gets; one submission, re-run once by the object's recovery.
  expect(output.reply).toEqual(await init(SlowFlow, { id: 'wf-read-agent' }).read(output.checkpoint.receipt));
  expect(await rows(bindings.FLUE_SLOW_FLOW_AGENT, 'wf-read-agent', 'SELECT id, attempt_count FROM flue_submissions')).toEqual([
    { id: output.checkpoint.receipt.submissionId, attempt_count: 2 },
  ]);
  // The read step never prompted: the user message reached the model in one submission only.
  const requests = await laneRequests(SLOW_FLOW_LANE);
  expect(requests.at(-1)!.messages.filter((m) => m.role === 'user' && m.content === 'Prepare order o-7.')).toHaveLength(1);
});

test('a failed submission fails the Workflow with the outcome in the error, without retrying the read', async () => {
  await scriptLane(FLOW_LANE, { status: 400, errorBody: 'scripted refusal' });
  const error = await withInstance(bindings.AGENT_FLOW, 'wf-failed', async (instance) => {
    await bindings.AGENT_FLOW.create({ id: 'wf-failed', params: { agent: 'Flow', agentId: 'wf-failed-agent', message: 'Fail, please.' } });
    await instance.waitForStatus('errored');
    // The same error through the binding's status(), as an app would read it.
    const status = await (await bindings.AGENT_FLOW.get('wf-failed')).status();
    expect(status.status).toBe('errored');
    expect(toAgentStepError(status.error)?.outcome).toBe('failed');
    return instance.getError();
  });
  const checkpoint = (stepResults.get('wf-failed/ask:dispatch') as AgentCheckpoint[])[0]!;
  // RPC keeps an error's message only (the class name travels as its prefix).
  expect(error.message).toMatch(/^AgentStepError: \[flue\] ask:read: /);
  expect(error.message).toContain(
    `submission "${checkpoint.receipt.submissionId}" of agent instance "wf-failed-agent" settled failed (operation_failed)`,
  );
  expect(toAgentStepError(error)).toMatchObject({
    step: 'ask:read',
    outcome: 'failed',
    type: 'operation_failed',
    id: 'wf-failed-agent',
    submissionId: checkpoint.receipt.submissionId,
  });
  expect(stepAttempts.get('wf-failed/ask:read')).toBe(1);
});

test("onFailure: 'return' checkpoints the failure and lets the Workflow go on", async () => {
  await scriptLane(FLOW_LANE, { status: 400, errorBody: 'scripted refusal' });
  const output = await withInstance(bindings.AGENT_FLOW, 'wf-failed-return', async (instance) => {
    await bindings.AGENT_FLOW.create({
      id: 'wf-failed-return',
      params: { agent: 'Flow', agentId: 'wf-failed-return-agent', message: 'Fail, please.', onFailure: 'return' },
    });
    await instance.waitForStatus('complete');
    return (await instance.getOutput()) as AgentStepResult<AgentStepReply>;
  });
  expect(output).toMatchObject({ outcome: 'failed', checkpoint: { id: 'wf-failed-return-agent' }, error: { type: 'operation_failed' } });
  expect(stepAttempts.get('wf-failed-return/ask:read')).toBe(1);
});

test('a rejected dispatch fails the Workflow at once, naming the rejection', async () => {
  const error = await withInstance(bindings.AGENT_FLOW, 'wf-rejected', async (instance) => {
    await bindings.AGENT_FLOW.create({
      id: 'wf-rejected',
      params: { agent: 'Flow', agentId: 'wf-rejected-agent', message: 'Continue, please.', uid: 'inc_gone' },
    });
    await instance.waitForStatus('errored');
    return instance.getError();
  });
  expect(toAgentStepError(error)).toMatchObject({
    step: 'ask:dispatch',
    outcome: 'rejected',
    type: 'agent_instance_not_found',
    id: 'wf-rejected-agent',
  });
  expect(stepAttempts.get('wf-rejected/ask:dispatch')).toBe(1);
  expect(stepAttempts.get('wf-rejected/ask:read')).toBeUndefined();
});

test('the key decision and the target are checked before any step runs', async () => {
  const calls: string[] = [];
  const step = { do: async (name: string) => void calls.push(name) } as unknown as WorkflowStep;
  await expect(runAgentStep(step, Flow, { name: 'ask', id: 'x', message: 'hi' } as never)).rejects.toThrow(/needs an idempotency decision/);
  await expect(runAgentStep(step, Flow, { name: 'ask', id: '', message: 'hi', idempotencyKey: false })).rejects.toThrow(
    /non-empty agent instance id/,
  );
  await expect(runAgentStep(step, Flow, { name: '', id: 'x', message: 'hi', idempotencyKey: false })).rejects.toThrow(/non-empty name/);
  await expect(runAgentStep(step, Flow, { name: 'ask', id: 'x', message: 'hi', idempotencyKey: '' })).rejects.toThrow(
    /idempotencyKey must be a non-empty string/,
  );
  expect(calls).toEqual([]);
});

test('a Workflow with a step.sleep between two agent calls continues the same conversation', async () => {
  await scriptLane(FLOW_LANE, { text: 'The first answer is 1.' }, { text: 'The second is 2.' });
  const output = await withInstance(bindings.CONVERSATION_FLOW, 'wf-conversation', async (instance) => {
    await bindings.CONVERSATION_FLOW.create({ id: 'wf-conversation', params: { agentId: 'wf-conversation-agent' } });
    await instance.waitForStatus('complete');
    return (await instance.getOutput()) as { first: AgentStepReply; second: AgentStepReply; checkpoints: AgentCheckpoint[] };
  });
  expect(output.first.text).toBe('The first answer is 1.');
  expect(output.second.text).toBe('The second is 2.');
  expect(output.second.uid).toBe(output.first.uid);
  // Two steps of one name get distinct derived keys (`#2` for the second).
  expect(
    await rows(
      bindings.FLUE_FLOW_AGENT,
      'wf-conversation-agent',
      `SELECT json_extract(payload, '$.idempotencyKey') AS k FROM flue_submissions ORDER BY ord`,
    ),
  ).toEqual([{ k: 'wf-conversation:turn' }, { k: 'wf-conversation:turn#2' }]);
  const requests = await laneRequests(FLOW_LANE);
  expect(requests).toHaveLength(2);
  expect(requests[1]!.messages.map((m) => m.content)).toEqual(
    expect.arrayContaining(['What is the first answer?', 'The first answer is 1.', 'And the second?']),
  );
});
