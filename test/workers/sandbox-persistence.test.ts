/**
 * virtualSandbox() on the Cloudflare host keeps its files in the Durable Object's SQLite: what one
 * message writes, the next message reads — also after the object is evicted, and after a crash in
 * the middle of a response. Seeded files apply only when the conversation's sandbox is created.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { afterEach, expect, test } from 'vitest';
import { init } from '@flue/runtime';
import type { RecordedRequest } from '@flue/runtime/testing';
import { LAB_PERSIST_LANE, SandboxLab, stall } from './sandbox-agents.ts';
import { laneRequests, resetLane, scriptLane, until } from './lanes.ts';
import { resetObject } from './reset-object.ts';
import './worker.ts';

const LANE = LAB_PERSIST_LANE;
const stubOf = (id: string) => (env as unknown as { FLUE_SANDBOX_LAB_AGENT: DurableObjectNamespace }).FLUE_SANDBOX_LAB_AGENT.getByName(id);

/** The results the model received for the calls of the last assistant turn, in call order. */
function lastResults(request: RecordedRequest) {
  const calls = request.messages.filter((m) => m.role === 'assistant' && m.toolCalls?.length).at(-1)!.toolCalls!;
  return calls.map((call) => {
    const result = request.messages.find((m) => m.role === 'tool' && m.toolCallId === call.id)!;
    return { name: call.name, content: result.content, isError: result.isError === true };
  });
}

const storedFiles = (id: string) =>
  runInDurableObject(stubOf(id), (_instance, state) =>
    state.storage.sql.exec(`SELECT path, kind, size FROM flue_sandbox_files WHERE kind = 'file' ORDER BY path`).toArray(),
  );

afterEach(async () => resetLane(LANE));

test('a file written in one message is read in the next; an edited seed stays edited', async () => {
  await resetLane(LANE);
  await scriptLane(
    LANE,
    {
      toolCalls: [
        { name: 'write', arguments: { path: 'journal/day1.md', content: 'Found the leak.' } },
        { name: 'edit', arguments: { path: 'README.md', oldText: '# Lab', newText: '# Lab (edited)' } },
      ],
    },
    { text: 'Noted.' },
    {
      toolCalls: [
        { name: 'read', arguments: { path: 'journal/day1.md' } },
        { name: 'read', arguments: { path: 'README.md' } },
      ],
    },
    { text: 'Read back.' },
  );
  const handle = init(SandboxLab, { id: 'persist-messages' });
  expect((await handle.read(await handle.dispatch('Write it down.'))).text).toBe('Noted.');
  expect((await handle.read(await handle.dispatch('Read it back.'))).text).toBe('Read back.');
  const requests = await laneRequests(LANE);
  expect(requests).toHaveLength(4);
  expect(lastResults(requests[1]!)).toEqual([
    { name: 'write', content: 'Successfully wrote 15 bytes to journal/day1.md', isError: false },
    { name: 'edit', content: 'Successfully replaced text in README.md.', isError: false },
  ]);
  expect(lastResults(requests[3]!)).toEqual([
    { name: 'read', content: 'Found the leak.', isError: false },
    { name: 'read', content: '# Lab (edited)', isError: false },
  ]);
  // The rows live in the object's own SQLite.
  const files = await storedFiles('persist-messages');
  expect(files).toContainEqual({ path: '/workspace/journal/day1.md', kind: 'file', size: 15 });
  expect(files).toContainEqual({ path: '/workspace/README.md', kind: 'file', size: 15 });
});

test('files survive the object being evicted between messages', async () => {
  await resetLane(LANE);
  await scriptLane(
    LANE,
    { toolCalls: [{ name: 'bash', arguments: { command: 'mkdir -p out && echo kept > out/a.txt && mv out results && rm notes.txt' } }] },
    { text: 'Done.' },
    {
      toolCalls: [
        { name: 'read', arguments: { path: 'results/a.txt' } },
        { name: 'bash', arguments: { command: 'ls; cat notes.txt' } },
      ],
    },
    { text: 'Still there.' },
  );
  const handle = init(SandboxLab, { id: 'persist-evicted' });
  expect((await handle.read(await handle.dispatch('Prepare results.'))).text).toBe('Done.');
  await resetObject(stubOf('persist-evicted'));
  expect((await handle.read(await handle.dispatch('Check the results.'))).text).toBe('Still there.');
  const [read, ls] = lastResults((await laneRequests(LANE))[3]!);
  expect(read).toEqual({ name: 'read', content: 'kept', isError: false });
  // The removed seed did not come back: seeds apply only when the sandbox is first created.
  expect(ls!.content).toContain('results');
  expect(ls!.content).toContain('cat: notes.txt: No such file or directory');
});

test('files written before a crash mid-response are there when the response recovers', async () => {
  await resetLane(LANE);
  stall.armed = true;
  stall.entered = false;
  await scriptLane(
    LANE,
    { toolCalls: [{ name: 'write', arguments: { path: 'crash/before.txt', content: 'written before the crash' } }] },
    { toolCalls: [{ name: 'stall', arguments: {} }] },
    { toolCalls: [{ name: 'read', arguments: { path: 'crash/before.txt' } }] },
    { text: 'Recovered.' },
  );
  const handle = init(SandboxLab, { id: 'persist-crash' });
  const reading = handle.read(await handle.dispatch('Write, then wait.'));
  await until(() => (stall.entered ? true : undefined));
  await resetObject(stubOf('persist-crash'));
  // The backstop alarm would fire in 30 s; run it now.
  await until(async () => ((await runDurableObjectAlarm(stubOf('persist-crash'))) ? true : undefined), 20_000);
  expect((await reading).text).toBe('Recovered.');
  const requests = await laneRequests(LANE);
  expect(lastResults(requests.at(-1)!)).toEqual([{ name: 'read', content: 'written before the crash', isError: false }]);
});
