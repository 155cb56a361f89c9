import { afterAll, beforeAll, expect, test } from 'vitest';
import { init, useModel } from '@flue/runtime';
import { start } from '@flue/runtime/node';
import { LANE_ROUTE, startScriptedModelServer, type ScriptedModelServer } from '@flue/runtime/testing';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer({ fallback: (request) => ({ text: `echo: ${request.messages.at(-1)?.content}` }) });
});
afterAll(async () => server.close());

function Helper() {
  useModel('anthropic/claude-haiku-4-5');
  return 'Help.';
}

test('FLUE_SCRIPTED_MODEL_URL points every model specifier at the scripted server; the fallback answers unscripted requests', async () => {
  const flue = await start({ agents: [Helper], env: { FLUE_SCRIPTED_MODEL_URL: server.url } });
  try {
    const handle = init(Helper, { id: 'x' });
    const reply = await handle.read(await handle.dispatch('ping'));
    expect(reply.text).toBe('echo: ping');
    expect(server.requests.at(-1)!.body.model).toBe('claude-haiku-4-5');
    expect(server.requests.at(-1)!.api).toBe('anthropic-messages');
  } finally {
    await flue.stop();
  }
});

test('lanes script a model id over HTTP and record its requests separately', async () => {
  const lane = `${server.url}${LANE_ROUTE}claude-haiku-4-5`;
  await fetch(lane, { method: 'POST', body: JSON.stringify({ steps: [{ text: 'from the lane' }] }) });
  const flue = await start({ agents: [Helper], env: { FLUE_SCRIPTED_MODEL_URL: server.url } });
  try {
    const handle = init(Helper, { id: 'y' });
    expect((await handle.read(await handle.dispatch('hello'))).text).toBe('from the lane');
    // The lane is empty again: the fallback takes over.
    expect((await handle.read(await handle.dispatch('again'))).text).toBe('echo: again');
    const recorded = (await (await fetch(`${lane}/requests`)).json()) as { messages: { content: string }[] }[];
    expect(recorded.map((r) => r.messages.at(-1)!.content)).toEqual(['hello', 'again']);
    await fetch(lane, { method: 'DELETE' });
    expect(await (await fetch(`${lane}/requests`)).json()).toEqual([]);
  } finally {
    await flue.stop();
  }
});
