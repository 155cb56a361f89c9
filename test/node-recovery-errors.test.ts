/**
 * A conversation whose recovery fails (a log this version cannot read: damaged, or written in a
 * newer layout) must not take the Node process down with it: the failure is logged with the
 * conversation's key, and every other conversation is served.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { dispatch, init, useModel } from '@flue/runtime';
import { sqlite, start } from '@flue/runtime/node';
import { type ScriptedModelServer, scriptedProvider, startScriptedModelServer } from '@flue/runtime/testing';

function Echo() {
  useModel('scripted/model');
  return 'Answer briefly.';
}

let server: ScriptedModelServer;
const dir = mkdtempSync(join(tmpdir(), 'flue-recovery-errors-'));
beforeAll(async () => {
  server = await startScriptedModelServer();
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

it('a conversation that cannot be recovered is logged by key; the process goes on serving the others', async () => {
  const file = join(dir, 'flue.db');
  const options = () => ({
    agents: [Echo],
    db: sqlite(file),
    providers: [scriptedProvider({ baseUrl: server.url, id: 'scripted', models: ['model'] })],
    env: {},
  });
  // A response cut off by a stop leaves its submission open for the next start.
  server.script({ text: ['never'], hangAfterChunks: 1 });
  const first = await start(options());
  const receipt = await dispatch(Echo, { id: 'broken', message: 'hello' });
  await expect.poll(() => server.requests.length).toBe(1);
  await first.stop({ graceMs: 0 });
  // Its log is made unreadable.
  const db = new DatabaseSync(file);
  db.prepare(
    `UPDATE flue_log SET records = '{not json' WHERE pos >> 32 = (SELECT log FROM flue_streams WHERE stream LIKE '%broken%')`,
  ).run();
  db.close();

  const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
  const second = await start(options());
  try {
    await expect.poll(() => logged.mock.calls.some((call) => String(call[0]).includes('broken'))).toBe(true);
    expect(String(logged.mock.calls.find((call) => String(call[0]).includes('broken'))![0])).toMatch(/could not run/);
    server.script({ text: 'Still here.' });
    const handle = init(Echo, { id: 'fine' });
    expect((await handle.read(await handle.dispatch('are you there?'))).text).toBe('Still here.');
    expect(receipt.submissionId).toMatch(/^sub_/);
  } finally {
    logged.mockRestore();
    await second.stop();
  }
});
