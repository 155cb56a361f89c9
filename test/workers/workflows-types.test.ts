/**
 * Compile-time contract of `@flue/runtime/workflows`, checked by `npx tsc --noEmit -p
 * tsconfig.workers.json` (vitest only needs the file to load; the Workflow code below is never
 * run). Each `@ts-expect-error` marks a usage that must NOT compile.
 */
import type { WorkflowEvent, WorkflowStep } from 'cloudflare:workers';
import { expect, expectTypeOf, test } from 'vitest';
import type { AgentReply, DispatchReceipt } from '@flue/runtime';
import {
  AgentStepError,
  dispatchScheduled,
  dispatchStep,
  readStep,
  runAgentStep,
  toAgentStepError,
  type AgentCheckpoint,
  type AgentStepCompleted,
  type AgentStepReply,
  type AgentStepResult,
} from '@flue/runtime/workflows';
import { Flow } from './workflows.ts';

// Declared, never called: the type checks live in its body.
async function typeChecks(step: WorkflowStep, event: WorkflowEvent<{ date: string }>, controller: ScheduledController) {
  // The idempotency decision is required: the event (derived key), a key, or an explicit false.
  await runAgentStep(step, Flow, { name: 'a', id: 'x', message: 'hi', event });
  await runAgentStep(step, Flow, { name: 'a', id: 'x', message: 'hi', idempotencyKey: 'mine' });
  await runAgentStep(step, Flow, { name: 'a', id: 'x', message: 'hi', idempotencyKey: false });
  // @ts-expect-error -- neither event nor idempotencyKey: the key decision is missing
  await runAgentStep(step, Flow, { name: 'a', id: 'x', message: 'hi' });
  // @ts-expect-error -- a key is a string or false
  await runAgentStep(step, Flow, { name: 'a', id: 'x', message: 'hi', idempotencyKey: true });
  // @ts-expect-error -- id is required (deterministic instance id, A1)
  await runAgentStep(step, Flow, { name: 'a', message: 'hi', event });
  // @ts-expect-error -- messages are delivered-message inputs
  await runAgentStep(step, Flow, { name: 'a', id: 'x', message: 42, event });
  // A signal works as the message too.
  await runAgentStep(step, Flow, { name: 'a', id: 'x', message: { kind: 'signal', type: 'nightly', body: 'go' }, event });

  // Default: the completed variant with the default projection.
  const plain = await runAgentStep(step, Flow, { name: 'a', id: 'x', message: 'hi', event });
  expectTypeOf(plain).toEqualTypeOf<AgentStepCompleted<AgentStepReply>>();
  expectTypeOf(plain.reply.text).toEqualTypeOf<string>();
  expectTypeOf(plain.checkpoint.receipt).toEqualTypeOf<DispatchReceipt>();

  // select decides what is checkpointed, and the reply type follows it.
  const selected = await runAgentStep(step, Flow, {
    name: 'a',
    id: 'x',
    message: 'hi',
    event,
    select: (reply) => ({ words: reply.text.split(' ').length }),
  });
  expectTypeOf(selected.reply).toEqualTypeOf<{ words: number }>();

  // onFailure: 'return' widens the result to the failure variant.
  const maybe = await runAgentStep(step, Flow, { name: 'a', id: 'x', message: 'hi', event, onFailure: 'return' });
  expectTypeOf(maybe).toEqualTypeOf<AgentStepResult<AgentStepReply>>();
  if (maybe.outcome === 'completed') expectTypeOf(maybe.reply).toEqualTypeOf<AgentStepReply>();
  else {
    expectTypeOf(maybe.outcome).toEqualTypeOf<'failed' | 'aborted'>();
    expectTypeOf(maybe.error).toEqualTypeOf<{ message: string; type?: string }>();
  }
  // @ts-expect-error -- only 'throw' or 'return'
  await runAgentStep(step, Flow, { name: 'a', id: 'x', message: 'hi', event, onFailure: 'ignore' });

  // The two halves.
  const checkpoint = await dispatchStep(step, Flow, { name: 'a', id: `nightly-${event.payload.date}`, message: 'hi', event });
  expectTypeOf(checkpoint).toEqualTypeOf<AgentCheckpoint>();
  expectTypeOf(await readStep(step, Flow, checkpoint)).toEqualTypeOf<AgentStepReply>();
  expectTypeOf(await readStep(step, Flow, checkpoint, { select: (reply: AgentReply) => reply.text })).toEqualTypeOf<string>();
  expectTypeOf(await readStep(step, Flow, checkpoint, { onFailure: 'return' })).toEqualTypeOf<AgentStepResult<AgentStepReply>>();
  // @ts-expect-error -- dispatchStep needs the key decision too
  await dispatchStep(step, Flow, { name: 'a', id: 'x', message: 'hi' });
  // @ts-expect-error -- readStep takes the checkpoint dispatchStep returned, not a bare receipt
  await readStep(step, Flow, checkpoint.receipt);

  // Cron: the controller is the tick.
  expectTypeOf(await dispatchScheduled(Flow, controller, { id: 'daily', body: 'Go.' })).toEqualTypeOf<DispatchReceipt>();
  // @ts-expect-error -- body is required
  await dispatchScheduled(Flow, controller, { id: 'daily' });
  // A Workflow's own schedule works as a tick as well.
  if (event.schedule) await dispatchScheduled(Flow, event.schedule, { id: 'daily', body: 'Go.', type: 'nightly' });

  // In run(): failures are typed.
  const failure = toAgentStepError(new Error('x'));
  if (failure) expectTypeOf(failure.outcome).toEqualTypeOf<'failed' | 'aborted' | 'rejected'>();
}

test('the type checks compile (and the error parser rejects foreign errors)', () => {
  expect(typeof typeChecks).toBe('function');
  expect(toAgentStepError(new Error('network down'))).toBeUndefined();
  const error = new AgentStepError({
    step: 'a:read',
    outcome: 'aborted',
    id: 'x',
    submissionId: 'sub_1',
    message: 'The submission was aborted.',
  });
  // Survives the trip through the engine as a bare message, with a prefix.
  expect(toAgentStepError({ message: `NonRetryableError: ${error.message}` })?.failure).toEqual(error.failure);
});
