/**
 * Load: 1,000 concurrent dispatch() calls to one conversation, on the real engine over a node:sqlite
 * file, against a scripted model that answers at once. Nothing here is timed; the test checks the
 * delivery guarantees still hold at that concurrency:
 *   - every dispatch resolves with its own submission id;
 *   - every submission settles exactly once (one `submission_settled` record each), a joined
 *     delivery with its host's outcome;
 *   - the conversation applies deliveries in acceptance order, each input exactly once;
 *   - none is lost: 1,000 accepted, 1,000 settled, 1,000 read() replies.
 * The log is checked in the database file itself after the runtime stopped, so the assertions
 * cover what was made durable, not only the engine's in-memory fold.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { dispatch, init, useModel, useTool, type DispatchReceipt } from '@flue/runtime';
import { sqlite, start, type Flue } from '@flue/runtime/node';
import {
  scriptedProvider,
  startScriptedModelServer,
  type RecordedRequest,
  type ScriptedModelServer,
  type ScriptedResponse,
} from '@flue/runtime/testing';
import { type DurableConversation, LEDGER_SQL, LOG_SQL, durableConversation, expectDeliveredOnce } from './support/delivery-checks.ts';

const COUNT = 1_000;
const INSTANCE = 'load';

function Load() {
  useModel('scripted/model');
  useTool({
    name: 'noop',
    description: 'Does nothing.',
    async run() {
      return 'done';
    },
  });
  return 'Answer briefly.';
}

const bodyOf = (i: number) => `load-${i}`;
const bodies = Array.from({ length: COUNT }, (_, i) => bodyOf(i));

/** Every `load-<n>` body the model was sent, in request order. */
function bodiesSeen(request: RecordedRequest): string[] {
  return request.messages.filter((m) => m.role === 'user').flatMap((m) => m.content.match(/load-\d+/g) ?? []);
}

let server: ScriptedModelServer;
/** What the next model request answers; set per test. */
let reply: (request: RecordedRequest) => ScriptedResponse = () => ({ text: 'ok' });
let dir: string;
let flue: Flue | undefined;

beforeAll(async () => {
  server = await startScriptedModelServer({ fallback: (request) => reply(request) });
  dir = mkdtempSync(join(tmpdir(), 'flue-load-'));
});
afterEach(async () => {
  await flue?.stop();
  flue = undefined;
  server.reset();
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

async function startOn(file: string): Promise<void> {
  flue = await start({
    agents: [Load],
    db: sqlite(file),
    providers: [scriptedProvider({ baseUrl: server.url, id: 'scripted', models: ['model'], api: 'openai-completions' })],
    env: {},
  });
}

/** The ledger and the log as the database file holds them, read after the runtime stopped. */
function readDurable(file: string): DurableConversation {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const stream = `agents/Load/${INSTANCE}`;
    return durableConversation(db.prepare(LEDGER_SQL).all(stream), db.prepare(LOG_SQL).all(stream));
  } finally {
    db.close();
  }
}

describe(`${COUNT} concurrent dispatches to one conversation`, () => {
  it('one burst: every dispatch is accepted, applied in order and settled once', async () => {
    const file = join(dir, 'burst.db');
    await startOn(file);
    reply = (request) => ({ text: `saw ${bodiesSeen(request).length}` });

    const receipts = await Promise.all(Array.from({ length: COUNT }, (_, i) => dispatch(Load, { id: INSTANCE, message: bodyOf(i) })));
    const handle = init(Load, { id: INSTANCE });
    const replies = await Promise.all(receipts.map((receipt) => handle.read(receipt)));
    expect(replies.map((r) => r.submissionId)).toEqual(receipts.map((r) => r.submissionId));
    await flue!.stop();
    flue = undefined;

    const durable = readDurable(file);
    const hostOf = expectDeliveredOnce(receipts, bodies, durable);
    // Calls made one after another by one caller are accepted in call order.
    expect(durable.accepted.map((row) => row.id)).toEqual(receipts.map((r) => r.submissionId));
    // One model request per response (this script never calls the tool), made by the hosts in turn.
    const hosts = [...new Set(hostOf.values())];
    expect(server.requests).toHaveLength(hosts.length);
    // The model saw every delivery once, in order: the last request carries the whole conversation.
    expect(bodiesSeen(server.requests.at(-1)!)).toEqual(bodies);
    // Every read() returned the answer of the response that took its delivery.
    const answerOf = new Map(hosts.map((host, i) => [host, `saw ${bodiesSeen(server.requests[i]!).length}`]));
    expect(replies.filter((r) => r.text !== answerOf.get(hostOf.get(r.submissionId)!)).map((r) => r.submissionId)).toEqual([]);
  });

  it("in waves over running responses: each wave joins its first delivery's live response, in order and once", async () => {
    const file = join(dir, 'waves.db');
    await startOn(file);
    // A request that ends with one fresh delivery (a wave's first) gets a tool call, so the response
    // has a turn boundary where the rest of the wave joins; the request after it gets the text.
    reply = (request) => {
      const fresh = request.messages.slice(request.messages.findLastIndex((m) => m.role !== 'user') + 1);
      return fresh.flatMap((m) => m.content.match(/load-\d+/g) ?? []).length === 1
        ? { toolCalls: [{ name: 'noop', arguments: {} }] }
        : { text: `saw ${bodiesSeen(request).length}` };
    };
    const WAVES = 10;
    const PER_WAVE = COUNT / WAVES;
    const handle = init(Load, { id: INSTANCE });

    // Each wave's first delivery starts a response on an idle conversation; the rest of the wave is
    // sent while that response's first model request is in flight, so they must join it at its turn
    // boundary. Reads of every receipt stay pending together across all waves.
    const receipts: DispatchReceipt[] = [];
    const reads: ReturnType<typeof handle.read>[] = [];
    for (let wave = 0; wave < WAVES; wave++) {
      const base = wave * PER_WAVE;
      const first = await dispatch(Load, { id: INSTANCE, message: bodyOf(base) });
      await server.waitForRequests(wave * 2 + 1, 30_000);
      const rest = await Promise.all(
        Array.from({ length: PER_WAVE - 1 }, (_, i) => dispatch(Load, { id: INSTANCE, message: bodyOf(base + 1 + i) })),
      );
      receipts.push(first, ...rest);
      reads.push(...[first, ...rest].map((receipt) => handle.read(receipt)));
      await handle.read(first);
    }
    const replies = await Promise.all(reads);
    expect(replies.map((r) => r.submissionId)).toEqual(receipts.map((r) => r.submissionId));
    await flue!.stop();
    flue = undefined;

    const durable = readDurable(file);
    const hostOf = expectDeliveredOnce(receipts, bodies, durable);
    const hosts = [...new Set(hostOf.values())];
    expect(durable.accepted.map((row) => row.id)).toEqual(receipts.map((r) => r.submissionId));
    // Exactly one response per wave, hosted by its first delivery and joined by the other 99.
    expect(hosts).toEqual(receipts.filter((_, i) => i % PER_WAVE === 0).map((r) => r.submissionId));
    expect(durable.accepted.map((row) => row.joinedInto)).toEqual(
      receipts.map((_, i) => (i % PER_WAVE === 0 ? null : receipts[i - (i % PER_WAVE)]!.submissionId)),
    );
    // Every reply is its wave's answer, given after the model had seen the whole wave.
    expect(replies.map((r) => r.text)).toEqual(receipts.map((_, i) => `saw ${(Math.floor(i / PER_WAVE) + 1) * PER_WAVE}`));
    expect(server.requests).toHaveLength(WAVES * 2);
    expect(bodiesSeen(server.requests.at(-1)!)).toEqual(bodies);
  });
});
