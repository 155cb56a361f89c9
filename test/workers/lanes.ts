/** Scripting the Node-side model server from inside workerd, one lane (model id) per agent. */
import { env } from 'cloudflare:workers';
import type { RecordedRequest, ScriptedResponse } from '@flue/runtime/testing';

const base = () => (env as unknown as { SCRIPTED_MODEL_URL: string }).SCRIPTED_MODEL_URL;

export async function scriptLane(lane: string, ...steps: ScriptedResponse[]): Promise<void> {
  const response = await fetch(`${base()}/__scripted/lanes/${encodeURIComponent(lane)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ steps }),
  });
  if (!response.ok) throw new Error(`scripting lane ${lane} failed: ${response.status}`);
}

export async function laneRequests(lane: string): Promise<RecordedRequest[]> {
  return (await (await fetch(`${base()}/__scripted/lanes/${encodeURIComponent(lane)}/requests`)).json()) as RecordedRequest[];
}

export async function resetLane(lane: string): Promise<void> {
  await fetch(`${base()}/__scripted/lanes/${encodeURIComponent(lane)}`, { method: 'DELETE' });
}

export async function until<T>(probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out waiting for a condition');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
