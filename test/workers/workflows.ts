/**
 * Workflow classes, agents and the cron handler the workerd Workflow and cron tests drive. The
 * Workflows run in the test isolate, so module state here is shared with the tests: a fault plan
 * that makes one step attempt die, and logs of what step bodies and agents did.
 */
import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from 'cloudflare:workers';
import * as v from 'valibot';
import { defineTool, init, useDelivery, useModel, useTool, type Delivery, type DispatchReceipt } from '@flue/runtime';
import { dispatchScheduled, runAgentStep } from '@flue/runtime/workflows';

export const WF_PROVIDER = 'scripted-wf';
export const FLOW_LANE = 'flow';
export const SLOW_FLOW_LANE = 'flow-slow';
export const DIGEST_LANE = 'digest';

// ── Agents ────────────────────────────────────────────────────────────────────────────────────

export function Flow() {
  useModel(`${WF_PROVIDER}/${FLOW_LANE}`);
  return 'Answer briefly.';
}

/** Side effects of SlowFlow's durable step, in order. */
export const slowFlowRuns: string[] = [];

const prepare = defineTool({
  name: 'prepare',
  description: 'Prepare an order in two durable steps.',
  input: v.object({ order: v.string() }),
  durable: true,
  async run({ data, step }) {
    const label = await step.do('label', () => {
      slowFlowRuns.push('label');
      return `label-${data.order}`;
    });
    const packed = await step.do('pack', async () => {
      slowFlowRuns.push('pack');
      // Slow enough for a test to reset the object while this step runs.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      return true;
    });
    return { output: { label, packed } };
  },
});

export function SlowFlow() {
  useModel(`${WF_PROVIDER}/${SLOW_FLOW_LANE}`);
  useTool(prepare);
  return 'Prepare orders.';
}

/** Every delivery the Digest agent rendered for, as `useDelivery()` returned it. */
export const digestDeliveries: Delivery[] = [];

export function Digest() {
  useModel(`${WF_PROVIDER}/${DIGEST_LANE}`);
  const delivery = useDelivery();
  digestDeliveries.push(delivery);
  const when =
    delivery.kind === 'signal' ? ` This run was scheduled for ${delivery.attributes?.scheduledAt} by "${delivery.attributes?.cron}".` : '';
  return `Write the daily digest.${when}`;
}

const AGENTS = { Flow, SlowFlow } as const;

// ── Fault injection ───────────────────────────────────────────────────────────────────────────

/** How the first attempt of one step dies (later attempts run normally). */
export type StepFault =
  /** The body runs to completion, then the attempt fails: as if the isolate died before the checkpoint. */
  | { kind: 'fail-after-body' }
  /** The body starts; the attempt fails when `until` resolves (the body's own result is ignored). */
  | { kind: 'fail-when'; until: Promise<unknown> };

const faults = new Map<string, StepFault>();
/** `${instanceId}/${stepName}` → how many times the step body was invoked. */
export const stepAttempts = new Map<string, number>();
/** `${instanceId}/${stepName}` → the results of the bodies that finished, per attempt. */
export const stepResults = new Map<string, unknown[]>();

export function injectFault(instanceId: string, stepName: string, fault: StepFault): void {
  faults.set(`${instanceId}/${stepName}`, fault);
}

function record(key: string, value: unknown): void {
  stepResults.set(key, [...(stepResults.get(key) ?? []), value]);
}

/** A WorkflowStep whose step bodies go through the fault plan of this instance. */
function withFaults(step: WorkflowStep, instanceId: string): WorkflowStep {
  const wrapped = {
    do(name: string, ...rest: unknown[]) {
      const at = rest.findIndex((item) => typeof item === 'function');
      const body = rest[at] as (ctx: unknown) => Promise<unknown>;
      const key = `${instanceId}/${name}`;
      rest[at] = async (ctx: unknown) => {
        const attempt = (stepAttempts.get(key) ?? 0) + 1;
        stepAttempts.set(key, attempt);
        const fault = attempt === 1 ? faults.get(key) : undefined;
        if (fault?.kind === 'fail-when') {
          body(ctx).then(
            (value) => record(key, value),
            () => {},
          );
          await fault.until;
          throw new Error(`injected: attempt 1 of "${name}" died`);
        }
        const value = await body(ctx);
        record(key, value);
        if (fault?.kind === 'fail-after-body') throw new Error(`injected: attempt 1 of "${name}" died after its body`);
        return value;
      };
      // A method call: `step` is an RPC stub.
      return (step as unknown as { do(...args: unknown[]): Promise<unknown> }).do(name, ...rest);
    },
    sleep: (name: string, duration: Parameters<WorkflowStep['sleep']>[1]) => step.sleep(name, duration),
    sleepUntil: (name: string, timestamp: Date | number) => step.sleepUntil(name, timestamp),
  };
  return wrapped as unknown as WorkflowStep;
}

// ── Workflows ─────────────────────────────────────────────────────────────────────────────────

export interface AgentFlowParams {
  agent: keyof typeof AGENTS;
  agentId: string;
  message: string;
  onFailure?: 'throw' | 'return';
  /** A continue-only send (e.g. a wrong uid, to see a rejected dispatch). */
  uid?: string;
}

/** One agent call through runAgentStep: dispatch step, read step, the result returned. */
export class AgentFlow extends WorkflowEntrypoint<unknown, AgentFlowParams> {
  async run(event: WorkflowEvent<AgentFlowParams>, step: WorkflowStep) {
    const { agent, agentId, message, onFailure, uid } = event.payload;
    const steps = withFaults(step, event.instanceId);
    const options = { name: 'ask', id: agentId, message, event, ...(uid === undefined ? {} : { uid }) };
    if (onFailure === 'return') return runAgentStep(steps, AGENTS[agent], { ...options, onFailure: 'return' });
    return runAgentStep(steps, AGENTS[agent], options);
  }
}

/** The plain pattern (workflows-and-schedules.md §1): init() and the handle verbs inside step.do. */
export class PlainInitFlow extends WorkflowEntrypoint<unknown, { agentId: string; message: string }> {
  async run(event: WorkflowEvent<{ agentId: string; message: string }>, step: WorkflowStep) {
    const agent = init(Flow, { id: event.payload.agentId }); // no I/O: replay-safe outside a step
    const receipt = await step.do('plain:dispatch', async () => {
      const { submissionId, acceptedAt, uid } = await agent.dispatch({
        message: event.payload.message,
        idempotencyKey: `${event.instanceId}:plain`,
      });
      return { submissionId, acceptedAt, uid };
    });
    return step.do('plain:read', async () => {
      const reply = await agent.read(receipt);
      return { text: reply.text, submissionId: reply.submissionId };
    });
  }
}

/** Two turns of one conversation with a sleep between them, both steps named `turn`. */
export class ConversationFlow extends WorkflowEntrypoint<unknown, { agentId: string }> {
  async run(event: WorkflowEvent<{ agentId: string }>, step: WorkflowStep) {
    const id = event.payload.agentId;
    const first = await runAgentStep(step, Flow, { name: 'turn', id, message: 'What is the first answer?', event });
    await step.sleep('think it over', '1 day');
    // Continue the same incarnation (A3): the handle's pin does not survive a replay, the checkpoint does.
    const second = await runAgentStep(step, Flow, {
      name: 'turn',
      id,
      uid: first.checkpoint.receipt.uid,
      message: 'And the second?',
      event,
    });
    return { first: first.reply, second: second.reply, checkpoints: [first.checkpoint, second.checkpoint] };
  }
}

// ── Cron ──────────────────────────────────────────────────────────────────────────────────────

export const DIGEST_ID = 'daily-digest';
/** Receipts of the ticks the scheduled handler dispatched. */
export const cronReceipts: DispatchReceipt[] = [];

export async function scheduled(controller: ScheduledController): Promise<void> {
  cronReceipts.push(await dispatchScheduled(Digest, controller, { id: DIGEST_ID, body: 'Summarize what happened since the last digest.' }));
}
