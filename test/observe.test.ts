import { expect, test } from 'vitest';
import * as v from 'valibot';
import { defineTool, init, observe, useModel, useTool, type FlueEvent } from '@flue/runtime';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

const ctx = useScriptedRuntime();

const noisy = defineTool({
  name: 'noisy',
  description: 'Logs progress.',
  input: v.object({ n: v.number() }),
  async run({ data, log, toolCallId }) {
    log.info('working', { n: data.n });
    log.warn('almost done');
    return `done ${toolCallId}`;
  },
});

function Worker() {
  useModel('anthropic/claude-haiku-4-5');
  useTool(noisy);
  return 'Work.';
}

test('tool log lines become log events stamped with the call, and never reach the model', async () => {
  await ctx.start([Worker]);
  const events: FlueEvent[] = [];
  const stop = observe((event) => {
    events.push(event);
  });
  const broken = observe(() => {
    throw new Error('a broken observer must not break the agent');
  });
  ctx.server.script({ toolCalls: [{ id: 'call_x', name: 'noisy', arguments: { n: 3 } }] }, { text: 'ok' });
  const handle = init(Worker, { id: 'o1' });
  const chunks: unknown[] = [];
  const reply = await handle.read(await handle.dispatch('go'), { onEvent: (c) => chunks.push(c) });
  stop();
  broken();
  expect(reply.text).toBe('ok');
  const logs = events.filter((e) => e.type === 'log');
  expect(logs.map((e) => [e.level, e.message])).toEqual([
    ['info', 'working'],
    ['warn', 'almost done'],
  ]);
  expect(logs[0]!.attributes).toEqual({ n: 3, tool: 'noisy', toolCallId: 'call_x' });
  expect(logs[0]!.instanceId).toBe('o1');
  expect(Object.isFrozen(logs[0])).toBe(true);
  const types = events.map((e) => e.type);
  expect(types.indexOf('submission_queued')).toBeLessThan(types.indexOf('submission_running'));
  expect(types.at(-1)).toBe('submission_settled');
  expect(JSON.stringify(ctx.server.requests[1]!.messages)).not.toContain('working');
  // On the conversation stream they are the call's log part (test/tool-log-stream.test.ts).
  expect(JSON.stringify(chunks)).toContain('almost done');
});
