/**
 * End to end on real workerd: `flue build` of the project template, `wrangler dev` on loopback
 * (started here, stopped by PID), work sent through a Worker route that calls dispatch() and
 * through a cron trigger, and a Workflow started from a Worker route whose result is read back. The
 * model is the scripted server, reached through FLUE_SCRIPTED_MODEL_URL.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startScriptedModelServer, type ScriptedModelServer } from '@flue/runtime/testing';
import { removeDir, templateCopy } from '../../src/build/test-project.ts';
import { buildProject, startWranglerDev, type DevServer } from '../support/wrangler-dev.ts';

let server: ScriptedModelServer;
let project: string;
let dev: DevServer | undefined;
let base: string;

beforeAll(async () => {
  server = await startScriptedModelServer();
  project = templateCopy('e2e');
  buildProject(project);
  dev = await startWranglerDev(project, { FLUE_SCRIPTED_MODEL_URL: server.url });
  base = dev.base;
}, 120_000);

afterAll(async () => {
  await dev?.stop();
  await server?.close();
  if (project) removeDir(project);
}, 30_000);

test('a Worker route dispatches to the agent Durable Object and reads the settled reply', async () => {
  server.script({ toolCalls: [{ name: 'current_time', arguments: { timeZone: 'UTC' } }] }, { text: 'It is a fine day.' });
  const response = await fetch(`${base}/hello/e2e-1`, { method: 'POST', body: 'What time is it?' });
  expect(response.status).toBe(200);
  const body = (await response.json()) as { reply: string; submissionId: string };
  expect(body.reply).toBe('It is a fine day.');
  expect(body.submissionId).toMatch(/^sub_/);
  const followUp = server.requests.at(-1)!;
  expect(followUp.body.model).toBe('claude-haiku-4-5');
  const tool = followUp.messages.find((m) => m.role === 'tool')!;
  expect(JSON.parse(tool.content)).toMatchObject({ timeZone: 'UTC' });
});

test('a cron trigger dispatches a signal once per tick; the conversation holds it', async () => {
  const before = server.requests.length;
  server.script({ text: 'Good morning!' });
  // One tick (a fixed scheduled time), fired twice: the keyed dispatch delivers it once.
  const tickUrl = `${base}/cdn-cgi/local/scheduled?cron=0+9+*+*+*&time=1764493200000`;
  const tick = await fetch(tickUrl);
  expect(tick.status).toBe(200);
  // The signal's response runs on the agent's alarm: wait for its model request.
  await server.waitForRequests(before + 1, 20_000);
  expect((await fetch(tickUrl)).status).toBe(200);
  const cronRequest = server.requests[before]!;
  const signal = cronRequest.messages.at(-1)!.content;
  expect(signal).toContain('type="schedule"');
  expect(signal).toContain('cron="0 9 * * *"');
  expect(signal).toContain('scheduledAt="2025-11-30T09:00:00.000Z"');

  server.script({ text: 'You were greeted this morning.' });
  const response = await fetch(`${base}/hello/daily`, { method: 'POST', body: 'What happened today?' });
  expect(((await response.json()) as { reply: string }).reply).toBe('You were greeted this morning.');
  // The repeated tick was admitted (or not) before this message and would have run first, in
  // order: one model call for the tick, one for this message, and the tick once in the history.
  expect(server.requests.length).toBe(before + 2);
  const history = server.requests.at(-1)!.messages.map((m) => m.content);
  expect(history.filter((c) => c.includes('type="schedule"'))).toHaveLength(1);
  expect(history).toContain('Good morning!');
});

test('a Workflow started from a Worker route runs the agent in its steps; its result is read back', async () => {
  const before = server.requests.length;
  server.script({ text: 'Welcome aboard, Ada!' });
  const started = await fetch(`${base}/greetings`, { method: 'POST', body: 'Ada' });
  expect(started.status).toBe(202);
  const { id } = (await started.json()) as { id: string };
  expect(id).toBeTruthy();

  // Poll the status route until the Workflow settles.
  type Status = { id: string; status: string; output?: { conversation: string; greeting: string }; error?: unknown };
  let body: Status | undefined;
  const deadline = Date.now() + 30_000;
  for (;;) {
    body = (await (await fetch(`${base}/greetings/${id}`)).json()) as Status;
    if (body.status !== 'queued' && body.status !== 'running' && body.status !== 'waiting') break;
    if (Date.now() > deadline) throw new Error(`the Workflow did not settle: ${JSON.stringify(body)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  expect(body, JSON.stringify(body)).toMatchObject({
    id,
    status: 'complete',
    output: { conversation: `greeting-${id}`, greeting: 'Welcome aboard, Ada!' },
  });
  // One model request: the message was delivered once, in the agent's conversation.
  expect(server.requests.length).toBe(before + 1);
  expect(server.requests[before]!.messages.at(-1)!.content).toBe('Write a one-line greeting for Ada.');

  // The conversation the Workflow used is an ordinary one: a route continues it.
  server.script({ text: 'I greeted Ada.' });
  const followUp = await fetch(`${base}/hello/greeting-${id}`, { method: 'POST', body: 'Whom did you greet?' });
  expect(((await followUp.json()) as { reply: string }).reply).toBe('I greeted Ada.');
  expect(server.requests.at(-1)!.messages.map((m) => m.content)).toContain('Welcome aboard, Ada!');

  expect((await fetch(`${base}/greetings/no-such-instance`)).status).toBe(404);
});
