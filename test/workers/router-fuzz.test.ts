/**
 * The router fuzz run of src/runtime/http/router-fuzz.test.ts, smaller, in real workerd: the same
 * generator against a mounted router whose runtime is the Durable Object host. Every answer must
 * be below 500 and every error the JSON envelope; each Durable Object touched may hold only the
 * conversation named by its own id, and only when an accepted request addressed it.
 *
 * The seed is printed; replay with FLUE_FUZZ_SEED=<seed> (passed in as a binding by vitest.workers.config.ts).
 */
import { env, runInDurableObject } from 'cloudflare:test';
import { Hono } from 'hono';
import { afterEach, expect, test } from 'vitest';
import { init } from '@flue/runtime';
import { buildAgentRouter } from '../../src/runtime/http/router.ts';
import { answerProblem, describeRequest, fuzzSeed, randomRequest, routedId, seededRng } from '../support/router-fuzz.ts';
import { ECHO_LANE, Echo } from './agents.ts';
import { resetLane, scriptLane } from './lanes.ts';
import './worker.ts';

const ORIGIN = 'http://flue.test';
const MOUNT = '/agents/echo';
const RUNS = 300;

afterEach(async () => resetLane(ECHO_LANE));

const echoNamespace = () => (env as unknown as { FLUE_ECHO_AGENT: DurableObjectNamespace }).FLUE_ECHO_AGENT;

test('malformed requests get 4xx envelopes in workerd, and only addressed objects hold a conversation', { timeout: 120_000 }, async () => {
  const seed = fuzzSeed((env as unknown as { FLUE_FUZZ_SEED?: string }).FLUE_FUZZ_SEED || undefined);
  console.log(`[router-fuzz:workerd] seed ${seed}`);
  const rng = seededRng(seed);
  // Accepted messages run in their object; each model call takes one scripted answer.
  await scriptLane(ECHO_LANE, ...Array.from({ length: 80 }, () => ({ text: 'ok' })));

  const app = new Hono();
  // Signals opted in, so generated signals reach their validation (the default refusal has its own tests).
  app.route(MOUNT, buildAgentRouter(Echo, { waitMs: 20, heartbeatMs: 10 }, { signals: true }));

  const problems: string[] = [];
  const touched = new Set<string>();
  const addressed = new Set<string>();
  const receipts: { id: string; submissionId: string }[] = [];
  for (let i = 0; i < RUNS; i++) {
    const request = randomRequest(rng, MOUNT, { validRate: 0.02, depths: [65, 2_000, 12_000], maxAttributes: 500 });
    const url = `${ORIGIN}${request.path}`;
    const response = await app.fetch(
      new Request(url, { method: request.method, headers: request.headers, ...(request.body === undefined ? {} : { body: request.body }) }),
    );
    const contentType = response.headers.get('content-type');
    const text = contentType === 'text/event-stream' ? (await response.body?.cancel(), '') : await response.text();
    const problem = answerProblem(request, url, MOUNT, response.status, contentType, text);
    if (problem !== undefined) problems.push(`${problem}\n    ${describeRequest(request)}`);
    const id = routedId(url, MOUNT);
    if (id === undefined || id.trim() === '') continue;
    touched.add(id);
    if (response.status < 300) addressed.add(id);
    if (response.status === 202) receipts.push({ id, submissionId: (JSON.parse(text) as { submissionId: string }).submissionId });
  }
  expect(problems.slice(0, 10), `seed ${seed}: ${problems.length} bad answers`).toEqual([]);

  // Let admitted work settle, so no alarm outlives the test (a failed run still settles).
  await Promise.allSettled(receipts.map(({ id, submissionId }) => init(Echo, { id }).read(submissionId)));

  const misplaced: string[] = [];
  for (const id of touched) {
    let stub: DurableObjectStub;
    try {
      stub = echoNamespace().getByName(id);
    } catch {
      continue; // a name workerd cannot address cannot have been written either
    }
    const rows = await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      if (sql.exec("SELECT name FROM sqlite_master WHERE name = 'flue_streams'").toArray().length === 0) return [];
      return sql.exec('SELECT instance_id FROM flue_streams').toArray();
    });
    for (const row of rows) {
      if (row.instance_id !== id || !addressed.has(id)) misplaced.push(`${JSON.stringify(id)} holds ${JSON.stringify(row.instance_id)}`);
    }
  }
  expect(misplaced, `seed ${seed}`).toEqual([]);
});
