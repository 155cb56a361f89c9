/**
 * Fuzzing the HTTP edge: thousands of malformed requests (control characters and encoded bytes
 * in ids, wrong methods, broken and deeply nested JSON, bad base64, huge attribute maps, odd
 * content types and queries) against a mounted router on a real Node runtime. Every answer must
 * be below 500, every error the JSON envelope with a known `type`, and the store must hold only
 * conversations some accepted request addressed by its exact id.
 *
 * The seed is printed; replay a run with FLUE_FUZZ_SEED=<seed> (and FLUE_FUZZ_RUNS=<n>).
 */
import { DatabaseSync } from 'node:sqlite';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Hono } from 'hono';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { useModel } from '@flue/runtime';
import { sqlite, start } from '@flue/runtime/node';
import { type ScriptedModelServer, startScriptedModelServer } from '@flue/runtime/testing';
import {
  answerProblem,
  describeRequest,
  fuzzSeed,
  isUnstorableId,
  randomRequest,
  routedId,
  seededRng,
} from '../../../test/support/router-fuzz.ts';
import { seedProviders } from '../../../test/support/scripted-runtime.ts';
import { conversationKey } from '../store/conversation-key.ts';
import { buildAgentRouter } from './router.ts';

const ORIGIN = 'http://flue.test';
const MOUNT = '/agents/echo';
const RUNS = Number(process.env.FLUE_FUZZ_RUNS ?? 2000);
/** A loaded machine still finishes in time; the count actually sent is printed. */
const TIME_BUDGET_MS = 15_000;

function Echo() {
  useModel('anthropic/claude-haiku-4-5');
  return 'Be brief.';
}

let server: ScriptedModelServer;
const dir = mkdtempSync(join(tmpdir(), 'flue-router-fuzz-'));

beforeAll(async () => {
  // Well-formed messages do get admitted and run; every model call gets a short answer.
  server = await startScriptedModelServer({ fallback: { text: 'ok' } });
});

afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

it('answers every malformed request with a 4xx envelope and writes only the addressed conversation', { timeout: 60_000 }, async () => {
  const seed = fuzzSeed(process.env.FLUE_FUZZ_SEED);
  console.log(`[router-fuzz] seed ${seed} (replay with FLUE_FUZZ_SEED=${seed})`);
  const rng = seededRng(seed);
  const file = join(dir, 'fuzz.db');
  const flue = await start({ agents: [Echo], db: sqlite(file), providers: seedProviders(server), env: {} });

  const app = new Hono();
  app.get('/health', (c) => c.text('ok'));
  // Short waits: long-poll and SSE answers must not hold the run up.
  // Signals opted in, so generated signals reach their validation (the default refusal has its own tests).
  app.route(MOUNT, buildAgentRouter(Echo, { waitMs: 20, heartbeatMs: 10 }, { signals: true }));

  const problems: string[] = [];
  const addressed = new Set<string>();
  const statuses = new Map<number, number>();
  const started = Date.now();
  let sent = 0;
  try {
    for (; sent < RUNS && Date.now() - started < TIME_BUDGET_MS; sent++) {
      const request = randomRequest(rng, MOUNT, { validRate: 0.05, depths: [65, 2_000, 12_000, 100_000], maxAttributes: 2_000 });
      const response = await app.fetch(
        new Request(`${ORIGIN}${request.path}`, {
          method: request.method,
          headers: request.headers,
          ...(request.body === undefined ? {} : { body: request.body }),
        }),
      );
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      const contentType = response.headers.get('content-type');
      // An SSE answer streams until the client leaves; its status and headers are the answer.
      const text = contentType === 'text/event-stream' ? (await response.body?.cancel(), '') : await response.text();
      const problem = answerProblem(request, `${ORIGIN}${request.path}`, MOUNT, response.status, contentType, text);
      if (problem !== undefined) problems.push(`${problem}\n    ${describeRequest(request)}`);
      if (response.status < 300) {
        const id = routedId(`${ORIGIN}${request.path}`, MOUNT);
        if (id !== undefined) addressed.add(id);
      }
    }
  } finally {
    await flue.stop();
  }
  console.log(
    `[router-fuzz] ${sent} requests in ${Date.now() - started} ms; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`,
  );
  expect(problems.slice(0, 10), `seed ${seed}: ${problems.length} bad answers`).toEqual([]);
  expect(sent).toBeGreaterThanOrEqual(Math.min(RUNS, 1_000));

  // Every row that names a conversation belongs to an id some accepted request addressed exactly.
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const allowed = new Set<string>([...addressed].map((id) => conversationKey('Echo', id)));
    const ids = (db.prepare('SELECT instance_id FROM flue_streams').all() as { instance_id: string }[]).map((row) => row.instance_id);
    expect(ids.filter(isUnstorableId), `seed ${seed}`).toEqual([]);
    expect(
      ids.filter((id) => !addressed.has(id)),
      `seed ${seed}`,
    ).toEqual([]);
    expect(
      ids.some((id) => id.startsWith('victim')),
      `seed ${seed}: a victim id was written`,
    ).toBe(false);
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((row) => row.name);
    for (const table of tables) {
      const columns = db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[];
      if (!columns.some((column) => column.name === 'stream')) continue;
      const streams = (db.prepare(`SELECT DISTINCT stream FROM ${table}`).all() as { stream: string }[]).map((row) => row.stream);
      expect(
        streams.filter((stream) => !allowed.has(stream)),
        `seed ${seed}: ${table}`,
      ).toEqual([]);
    }
  } finally {
    db.close();
  }
});
