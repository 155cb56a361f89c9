/**
 * A recorded conversation replayed against the Hello agent, in Node (replay is Node only): every
 * model answer and tool result comes from test/recordings/hello.json, so nothing calls a model,
 * and the test fails if the agent now goes another way (other instructions, tools, tool calls,
 * arguments, results or reply text).
 *
 * After you change the agent on purpose, record the conversation again (the same messages,
 * against test/scripted-model.ts) and commit the new file:
 *
 *   RECORD=1 npx vitest run --project node
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { type ConversationExport, exportConversation, init } from '@flue/runtime';
import { sqlite, start } from '@flue/runtime/node';
import { replayConversation, startScriptedModelServer } from '@flue/runtime/testing';
import { Hello } from '../src/agents/hello.ts';
import { scriptedModel } from './scripted-model.ts';

const RECORDING = new URL('./recordings/hello.json', import.meta.url);
const MESSAGES = ['Hi!', 'What time is it in Tokyo?'];

test('the recorded Hello conversation replays with no divergence', async () => {
  if (process.env['RECORD'] === '1') await record();
  const recording = JSON.parse(readFileSync(RECORDING, 'utf8')) as ConversationExport;

  const report = await replayConversation({ agent: Hello, recording });

  report.expectNoDivergence();
  expect(report.turns.every((turn) => turn.answeredFrom === 'recording')).toBe(true);
  expect(report.replayed.map((delivery) => delivery.reply)).toEqual([
    'You said: Hi!',
    expect.stringMatching(/^In Asia\/Tokyo it is \d{1,2}\/\d{1,2}\/\d{4}, /),
  ]);
});

/** Sends MESSAGES to Hello on a Node runtime with the scripted model and writes the export. */
async function record(): Promise<void> {
  const server = await startScriptedModelServer({ fallback: scriptedModel });
  const flue = await start({ agents: [Hello], db: sqlite(), env: { FLUE_SCRIPTED_MODEL_URL: server.url } });
  try {
    const hello = init(Hello, { id: 'recorded' });
    for (const message of MESSAGES) await hello.read(await hello.dispatch(message));
    writeFileSync(RECORDING, `${JSON.stringify(await exportConversation(Hello, 'recorded'), null, 2)}\n`);
  } finally {
    await flue.stop();
    await server.close();
  }
}
