import { afterEach, expect, test } from 'vitest';
import { init, instrument } from '@flue/runtime';
import { otelInstrumentation } from '@flue/runtime/otel';
import { RecordingTracer, spansNamed } from '../support/recording-tracer.ts';
import { ECHO_LANE, Echo } from './agents.ts';
import { resetLane, scriptLane } from './lanes.ts';
import './worker.ts';

afterEach(async () => resetLane(ECHO_LANE));

test('inside a Durable Object, a delegated task traces as model and tool calls of its submission, with task ids', async () => {
  const tracer = new RecordingTracer();
  const uninstall = instrument(otelInstrumentation({ tracer }));
  try {
    await scriptLane(
      ECHO_LANE,
      {
        toolCalls: [{ id: 'call_task_otel', name: 'task', arguments: { agent: 'researcher', prompt: 'Look up k9.' } }],
        usage: { input: 20, output: 3 },
      },
      { toolCalls: [{ id: 'call_lookup_otel', name: 'lookup', arguments: { key: 'k9' } }], usage: { input: 30, output: 4 } },
      { text: 'k9 is value-of-k9.', usage: { input: 40, output: 5 } },
      { text: 'Found it.', usage: { input: 50, output: 6 } },
    );
    const handle = init(Echo, { id: 'delegate-otel-1' });
    const receipt = await handle.dispatch('What is k9?');
    expect((await handle.read(receipt)).text).toBe('Found it.');
  } finally {
    await uninstall();
  }
  const [submission, ...others] = spansNamed(tracer.spans, 'flue.submission');
  expect(others).toEqual([]);
  const models = spansNamed(tracer.spans, 'flue.model_call');
  const tools = spansNamed(tracer.spans, 'flue.tool_call');
  expect(models).toHaveLength(4);
  expect(tools.map((span) => span.attributes['flue.tool.name'])).toEqual(['task', 'lookup']);
  // No context manager in this Worker: calls find their submission's span by id.
  for (const span of [...models, ...tools]) expect(span.parentSpanId).toBe(submission!.spanId);
  expect(tracer.spans.every((span) => span.ended)).toBe(true);
  expect(models[0]!.attributes).toMatchObject({
    'gen_ai.system': 'scripted',
    'gen_ai.request.model': ECHO_LANE,
    'flue.session': 'default',
    'flue.instance_id': 'delegate-otel-1',
  });
  // The child session's calls say which task they belong to.
  expect(models[1]!.attributes['flue.task_id']).toEqual(expect.any(String));
  expect(models[1]!.attributes['flue.session']).toMatch(/^task:/);
  expect(tools[1]!.attributes).toMatchObject({
    'flue.tool_call_id': 'call_lookup_otel',
    'flue.task_id': models[1]!.attributes['flue.task_id'],
  });
  expect(submission!.attributes).toMatchObject({ 'gen_ai.usage.input_tokens': 140, 'gen_ai.usage.output_tokens': 18 });
  // Spans built from runtime events nest under the submission too: its operation and the task.
  const [operation, ...moreOperations] = spansNamed(tracer.spans, 'flue.operation');
  const [task, ...moreTasks] = spansNamed(tracer.spans, 'flue.task');
  expect([moreOperations, moreTasks]).toEqual([[], []]);
  expect(operation).toMatchObject({ parentSpanId: submission!.spanId, attributes: { 'flue.operation.kind': 'prompt' } });
  expect(task).toMatchObject({ parentSpanId: submission!.spanId, attributes: { 'flue.task_id': models[1]!.attributes['flue.task_id'] } });
});
