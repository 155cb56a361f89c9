/**
 * The Hello agent through the Worker's routes (src/app.ts), in workerd: each conversation is a
 * Durable Object, and the model is scripted (test/scripted-model.ts).
 */
import { exports } from 'cloudflare:workers';
import { expect, test } from 'vitest';

// The Worker under test is the generated dist/worker.js; its default export serves src/app.ts.
const worker = (exports as unknown as { default: Fetcher }).default;

async function ask(id: string, message: string): Promise<{ reply?: string; error?: string }> {
  const response = await worker.fetch(`http://app.test/hello/${id}`, { method: 'POST', body: message });
  return (await response.json()) as { reply?: string; error?: string };
}

test('Hello answers a message', async () => {
  expect(await ask('alice', 'Hi!')).toMatchObject({ reply: 'You said: Hi!' });
});

test('Hello calls its current_time tool and answers with what it returned', async () => {
  const { reply } = await ask('bob', 'What time is it in Tokyo?');
  expect(reply).toMatch(/^In Asia\/Tokyo it is \d{1,2}\/\d{1,2}\/\d{4}, /);
});

test('the agent router streams a conversation: the message, then the reply', async () => {
  await ask('carol', 'Remember me.');
  const response = await worker.fetch('http://app.test/api/agents/hello/carol?view=updates&offset=-1');
  expect(response.status).toBe(200);
  const updates = await response.text();
  expect(updates).toContain('Remember me.');
  expect(updates).toContain('You said: Remember me.');
});
