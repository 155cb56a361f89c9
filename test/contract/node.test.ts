/** The host contract (cases.ts) on Node: `start()` on a SQLite file, restarted on the same file. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { type Flue, sqlite, start } from '@flue/runtime/node';
import { type ScriptedModelServer, scriptedProvider, startScriptedModelServer } from '@flue/runtime/testing';
import { CONTRACT_LANE, Contract } from './agents.ts';
import { hostContract } from './cases.ts';

let server: ScriptedModelServer;
let flue: Flue;
let path: string;

const boot = () =>
  start({
    agents: [Contract],
    db: sqlite(path),
    providers: [scriptedProvider({ baseUrl: server.url, id: 'scripted', models: [CONTRACT_LANE], api: 'openai-completions' })],
    env: {},
  });

beforeAll(async () => {
  server = await startScriptedModelServer();
  path = join(mkdtempSync(join(tmpdir(), 'flue-contract-')), 'flue.db');
  flue = await boot();
});

afterAll(async () => {
  await flue.stop();
  await server.close();
});

hostContract(() => ({
  modelUrl: server.url,
  async restart() {
    // No grace: the running response is cut off where it is, as when the process dies.
    await flue.stop({ graceMs: 0 });
    flue = await boot();
  },
}));
