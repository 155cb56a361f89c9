/**
 * Seed 000, durable tools: "durable: true, harness: true together receive both step and harness;
 * wrap harness.prompt(...) in a step so recovery does not prompt again". A crash after the
 * prompt's step recorded its value replays it: the tool runs again, the model is not asked twice.
 */
import * as v from 'valibot';
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import { defineTool, dispatch, init, useModel, useTool } from '@flue/runtime';
import {
  type CrashHarness,
  type ScriptedModelServer,
  crashHarness,
  scriptedProvider,
  startScriptedModelServer,
} from '@flue/runtime/testing';

/** What the `file` step filed, in this process (the harness counts runs on its own). */
const filed: string[] = [];

const reviewAndFile = defineTool({
  name: 'review_and_file',
  description: 'Reviews a contract, then files the review.',
  input: v.object({ contract: v.string() }),
  durable: true,
  harness: true,
  async run({ data, step, harness }) {
    const review = await step.do('review', async () => (await harness.prompt(`Review: ${data.contract}`)).text);
    const receipt = await step.do('file', () => {
      filed.push(review);
      return `filed-${filed.length}`;
    });
    return { output: { review, receipt } };
  },
});

function Clerk() {
  useModel('anthropic/claude-haiku-4-5');
  useTool(reviewAndFile);
  return 'Review and file contracts.';
}

let server: ScriptedModelServer;
let lab: CrashHarness | undefined;
beforeAll(async () => {
  server = await startScriptedModelServer();
});
afterAll(async () => server.close());
afterEach(async () => {
  await lab?.close();
  lab = undefined;
});

test('durable + harness: a crash after the prompt step replays the recorded review; the model is asked once', async () => {
  lab = await crashHarness({
    agents: [Clerk],
    providers: [scriptedProvider({ baseUrl: server.url, id: 'anthropic', models: ['claude-haiku-4-5'], api: 'anthropic-messages' })],
    env: {},
  });
  server.script(
    { toolCalls: [{ id: 'call_review', name: 'review_and_file', arguments: { contract: 'clause 7' } }] },
    { text: 'Clause 7 is unusual.' }, // the harness prompt, inside the `review` step
    { text: 'Reviewed and filed.' },
    { text: 'spare step (unexpected extra model call)' },
  );
  lab.crashAt({ point: 'step', tool: 'review_and_file', name: 'file' });
  const receipt = await dispatch(Clerk, { id: 'clerk', message: 'Review clause 7 and file it.' });
  expect(await lab.crashed).toMatchObject({ point: 'step', tool: 'review_and_file', step: 'file', toolCallId: 'call_review' });
  await lab.restart();

  const report = await lab.settle();
  expect(report.submissions.map((s) => [s.outcome, s.settlements, s.attempts])).toEqual([['completed', 1, 2]]);
  expect(report.toolRuns).toEqual({ review_and_file: 2 });
  expect(report.stepRuns).toEqual({ 'review_and_file/review': 1, 'review_and_file/file': 2 });
  // One scratch prompt across both runs: the tool call, the review, the final answer.
  expect(server.requests).toHaveLength(3);
  expect(server.requests[1]!.messages[0]!.content).toBe('Review: clause 7');
  const result = server.requests[2]!.messages.find((m) => m.role === 'tool' && m.toolCallId === 'call_review')!;
  expect(JSON.parse(result.content)).toEqual({ review: 'Clause 7 is unusual.', receipt: 'filed-2' });
  expect(filed).toEqual(['Clause 7 is unusual.', 'Clause 7 is unusual.']);
  expect((await init(Clerk, { id: 'clerk' }).read(receipt)).text).toBe('Reviewed and filed.');
});
