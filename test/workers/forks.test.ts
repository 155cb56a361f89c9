/**
 * `fork()` and `exportConversation()` on Cloudflare: the source Durable Object exports, a new one
 * imports (a large export crosses the RPC as a stream both ways); the fork answers from the
 * history and state it was cut with, in its own object's SQLite, and the original is untouched.
 */
import { env } from 'cloudflare:test';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { AgentInstanceExistsError, type ConversationExport, ForkPointError, exportConversation, fork, init } from '@flue/runtime';
import type { RecordedRequest } from '@flue/runtime/testing';
import { Brancher, FORK_LANE } from './agents.ts';
import { laneRequests, resetLane, scriptLane } from './lanes.ts';
import './worker.ts';
import { objectHasStore, objectRows } from './object-store.ts';
import { LOG_ROWS } from '../support/log-sql.ts';

const namespace = () => (env as unknown as { FLUE_BRANCHER_AGENT: DurableObjectNamespace }).FLUE_BRANCHER_AGENT;

/** A table the conversation never wrote (state, made by its first write) reads as no rows, as the store reads it. */
function rows(id: string, sql: string): Promise<Record<string, unknown>[]> {
  return objectRows(namespace().getByName(id), sql);
}

async function ask(id: string, body: string) {
  const handle = init(Brancher, { id });
  return handle.read(await handle.dispatch(body));
}

function userTexts(request: RecordedRequest): string[] {
  return request.messages.filter((m) => m.role === 'user' && !m.content.startsWith('<signal')).map((m) => m.content);
}

function settledOffsets(exported: ConversationExport): number[] {
  return exported.conversations[0]!.batches.filter((b) => b.records.some((r) => r.type === 'submission_settled')).map((b) => b.seq);
}

let before: ConversationExport;

beforeAll(async () => {
  await resetLane(FORK_LANE);
  await scriptLane(
    FORK_LANE,
    { toolCalls: [{ name: 'bump', arguments: {} }] },
    { text: 'one' },
    { toolCalls: [{ name: 'bump', arguments: {} }] },
    { text: 'two' },
  );
  await ask('orig', 'first');
  await ask('orig', 'second');
  before = await exportConversation(Brancher, 'orig');
});
afterAll(() => resetLane(FORK_LANE));

test('a fork after the first settlement is a new Durable Object holding that prefix and the state as of there', async () => {
  const [firstSettled] = settledOffsets(before);
  const { id, uid } = await fork(Brancher, { from: 'orig', at: firstSettled, id: 'branch' });
  expect(id).toBe('branch');
  // The new object holds only its own conversation, under its own key.
  expect(await rows('branch', 'SELECT stream FROM flue_streams')).toEqual([{ stream: 'agents/Brancher/branch' }]);
  expect(await rows('branch', `SELECT max(seq) AS head FROM ${LOG_ROWS}`)).toEqual([{ head: firstSettled }]);
  expect(await rows('branch', 'SELECT name, value FROM flue_state')).toEqual([{ name: 'count', value: '1' }]);
  // No submission is copied: the branch has no ledger (it is made by a first row).
  expect(await rows('branch', 'SELECT count(*) AS n FROM flue_submissions')).toEqual([]);

  await scriptLane(FORK_LANE, { text: 'three' });
  expect((await ask('branch', 'third')).text).toBe('three');
  const request = (await laneRequests(FORK_LANE)).at(-1)!;
  expect(request.system).toContain('Count: 1.');
  expect(userTexts(request)).toEqual(['first', 'third']);
  const copy = await exportConversation(Brancher, 'branch');
  expect(copy.conversations[0]!.batches[0]!.records[0]).toMatchObject({ uid, forkedFrom: { instanceId: 'orig', at: firstSettled } });

  // The original is untouched.
  const after = await exportConversation(Brancher, 'orig');
  expect(after.conversations[0]!.batches).toEqual(before.conversations[0]!.batches);
  expect(after.conversations[0]!.state).toEqual({ count: 2 });
});

test('a cut after a user message or inside a response is refused with the typed error, rebuilt across the RPC, and stores nothing', async () => {
  const [firstSettled, head] = settledOffsets(before);
  const input = before.conversations[0]!.batches.find((b) => b.records.some((r) => r.type === 'user_message'))!.seq;
  for (const at of [input, firstSettled! - 1]) {
    const error = await fork(Brancher, { from: 'orig', at, id: 'refused' }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(ForkPointError);
    expect(error).toMatchObject({ type: 'fork_point_unsettled', reason: 'unsettled', at, meta: { before: 0, after: firstSettled, head } });
  }
  // No call reached the new object: its database holds no store at all (its first call would make it).
  expect(await objectHasStore(namespace().getByName('refused'))).toBe(false);
  const taken = await fork(Brancher, { from: 'orig', id: 'branch' }).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(taken).toBeInstanceOf(AgentInstanceExistsError);
});

test('a fork at the birth holds the initial record alone and no state', async () => {
  const { id } = await fork(Brancher, { from: 'orig', at: 0 });
  expect(await rows(id, `SELECT seq FROM ${LOG_ROWS}`)).toEqual([{ seq: 0 }]);
  expect(await rows(id, 'SELECT name FROM flue_state')).toEqual([]);
});

test('a fork whose export is over 4 MiB crosses the RPC as a stream and arrives whole', async () => {
  const bytes = 5 * 1024 * 1024;
  await scriptLane(FORK_LANE, { toolCalls: [{ name: 'stash', arguments: { bytes } }] }, { text: 'stashed' });
  await ask('hoard', 'stash it');
  const { id } = await fork(Brancher, { from: 'hoard' });
  const copy = await exportConversation(Brancher, id);
  expect((copy.conversations[0]!.state.stash as string).length).toBe(bytes);
  // A state never set is not stored: the default is the agent's.
  expect(Object.keys(copy.conversations[0]!.state)).toEqual(['stash']);
});
