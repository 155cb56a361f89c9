/**
 * `fork()` and `exportConversation()` through the public API on Node: a fork at every kind of
 * record boundary (the birth, after a settlement, after a compaction; refused inside a submission),
 * the fork answering from the history, state and attachments it was cut with, child conversations
 * carried along, and the original untouched.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AgentInstanceExistsError,
  AgentInstanceNotFoundError,
  type ConversationExport,
  ForkPointError,
  InvalidRequestError,
  defineSubagent,
  exportConversation,
  fork,
  getUsage,
  init,
  useModel,
  usePersistentState,
  useSubagent,
  useTool,
} from '@flue/runtime';
import { type Flue, sqlite, start } from '@flue/runtime/node';
import {
  type RecordedRequest,
  type ScriptedModelServer,
  type ScriptedResponse,
  childConversations,
  startScriptedModelServer,
} from '@flue/runtime/testing';
import { seedProviders } from './support/scripted-runtime.ts';
import { expectFlueError, rejection } from './api/helpers.ts';

const MODEL = 'anthropic/claude-haiku-4-5';

/** Calls `bump` when the last user message asks for it; otherwise answers naming what it last heard. */
function reply(request: RecordedRequest): ScriptedResponse {
  const last = request.messages.at(-1)!;
  if (last.role === 'user' && last.content.includes('/bump')) return { toolCalls: [{ name: 'bump', arguments: {} }] };
  if (last.role === 'user' && last.content.includes('/delegate')) {
    return { toolCalls: [{ name: 'task', arguments: { agent: 'clerk', prompt: 'file it' } }] };
  }
  const lastUser = request.messages.filter((message) => message.role === 'user').at(-1)?.content ?? '';
  return { text: `heard: ${lastUser}` };
}

function Counter() {
  useModel(MODEL);
  const [count, setCount] = usePersistentState('count', 0);
  useTool({ name: 'bump', description: 'Adds one.', run: () => (setCount((n: number) => n + 1), 'bumped') });
  return `Count: ${count}.`;
}

const clerk = defineSubagent({ name: 'clerk', description: 'Files things.', agent: () => 'You file things.' });

function Manager() {
  useModel(MODEL);
  useSubagent(clerk);
  return 'Delegate.';
}

function Chatty() {
  useModel(MODEL, { compaction: { keepRecentTokens: 20 } });
  return 'Chat.';
}

const pixel = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex');

let server: ScriptedModelServer;
let flue: Flue;
/** The original conversation as exported before any fork was made. */
let before: ConversationExport;

async function ask(agent: typeof Counter, id: string, message: Parameters<ReturnType<typeof init>['dispatch']>[0]) {
  const handle = init(agent, { id });
  return handle.read(await handle.dispatch(message));
}

/** The batch holding the first record of `type` (and matching `match`). */
function seqOf(exported: ConversationExport, type: string, match: (record: Record<string, unknown>) => boolean = () => true): number {
  const batch = exported.conversations[0]!.batches.find((b) => b.records.some((r) => r.type === type && match(r as never)));
  if (batch === undefined) throw new Error(`no ${type} record`);
  return batch.seq;
}

/** What the user said in a model request: the first line of each user message (signals left out). */
function userTexts(request: RecordedRequest): string[] {
  return request.messages.filter((m) => m.role === 'user' && !m.content.startsWith('<signal')).map((m) => m.content.split('\n')[0]!);
}

/** The log without what a fork rewrites (the birth record's ids) or stamps (the export time). */
function comparable(exported: ConversationExport) {
  return exported.conversations[0]!.batches.slice(1);
}

beforeAll(async () => {
  server = await startScriptedModelServer({ fallback: reply });
  flue = await start({
    agents: [Counter, Manager, Chatty],
    db: sqlite(),
    // Room for the attached image (about 1,200 estimated tokens) in a request; the compaction test reports a context near it.
    providers: seedProviders(server, { contextWindow: 4000 }),
    env: {},
  });
  await ask(Counter, 'orig', {
    message: { kind: 'user', body: 'one /bump', attachments: [{ type: 'image', data: pixel.toString('base64'), mimeType: 'image/png' }] },
  });
  await ask(Counter, 'orig', 'two /bump');
  before = await exportConversation(Counter, 'orig');
});
afterAll(async () => {
  await flue.stop({ graceMs: 0 });
  await server.close();
});

describe('fork()', () => {
  it('by default keeps the whole settled log and the state, under new ids, and answers from that history', async () => {
    const { id, uid } = await fork(Counter, { from: 'orig' });
    expect(id).not.toBe('orig');
    const copy = await exportConversation(Counter, id);
    expect(comparable(copy)).toEqual(comparable(before));
    expect(copy.conversations[0]!.state).toEqual({ count: 2 });
    const birth = copy.conversations[0]!.batches[0]!.records[0] as Record<string, unknown>;
    const original = before.conversations[0]!.batches[0]!.records[0] as Record<string, unknown>;
    expect(birth).toMatchObject({ uid, forkedFrom: { instanceId: 'orig', conversationId: original.conversationId, at: before.at } });
    expect(birth.conversationId).not.toBe(original.conversationId);
    // The attachment is the fork's own copy.
    expect(copy.conversations[0]!.attachments.map((a) => a.data)).toEqual([pixel.toString('base64')]);

    const answer = await ask(Counter, id, 'three');
    expect(answer.text).toBe('heard: three');
    const request = server.requests.at(-1)!;
    expect(request.system).toContain('Count: 2.');
    expect(userTexts(request)).toEqual(['one /bump', 'two /bump', 'three']);
    // The fork's ledger starts with the settlements it copied (read from its log), then its own.
    const [source, forked] = [await getUsage(Counter, 'orig'), await getUsage(Counter, id)];
    expect(forked!.submissions.slice(0, 2)).toEqual(source!.submissions);
    expect(forked!.submissions).toHaveLength(3);
    expect(forked!.total.totalTokens).toBe(source!.total.totalTokens + forked!.submissions[2]!.usage.totalTokens);
    // The original is untouched.
    expect(comparable(await exportConversation(Counter, 'orig'))).toEqual(comparable(before));
  });

  it('after a settlement keeps the log and the state as they were there', async () => {
    const firstSettled = seqOf(before, 'submission_settled');
    const { id } = await fork(Counter, { from: 'orig', at: firstSettled, id: 'after-first' });
    expect(id).toBe('after-first');
    const copy = await exportConversation(Counter, id);
    expect(copy.conversations[0]!.state).toEqual({ count: 1 });
    expect(copy.at).toBe(firstSettled);
    await ask(Counter, id, 'again');
    const request = server.requests.at(-1)!;
    expect(request.system).toContain('Count: 1.');
    expect(userTexts(request)).toEqual(['one /bump', 'again']);
  });

  it('at the birth keeps only the initial data: no messages, no state', async () => {
    const { id } = await fork(Counter, { from: 'orig', at: 0 });
    const copy = await exportConversation(Counter, id);
    expect(copy.conversations[0]!.state).toEqual({});
    expect(copy.conversations[0]!.attachments).toEqual([]);
    await ask(Counter, id, 'fresh');
    const request = server.requests.at(-1)!;
    expect(request.system).toContain('Count: 0.');
    expect(request.messages.map((m) => m.content)).toEqual(['fresh']);
  });

  it('refuses a cut after a user message or between the steps of a response, naming the nearest allowed cuts', async () => {
    const firstSettled = seqOf(before, 'submission_settled');
    const secondInput = seqOf(before, 'user_message', (r) => r.body === 'two /bump');
    for (const at of [seqOf(before, 'user_message'), seqOf(before, 'tool_results'), secondInput]) {
      const error = expectFlueError(await rejection(fork(Counter, { from: 'orig', at })), ForkPointError, 'fork_point_unsettled');
      expect(error.meta).toMatchObject({ at, head: before.head });
      expect(error.meta!.before).toBe(at < firstSettled ? 0 : firstSettled);
      expect(error.meta!.after).toBe(at < firstSettled ? firstSettled : before.head);
      expect(error.details).toMatch(/^at: Cut at \d+ or \d+ instead\.$/);
    }
    expectFlueError(await rejection(fork(Counter, { from: 'orig', at: before.head + 1 })), ForkPointError, 'fork_point_out_of_range');
    expectFlueError(await rejection(fork(Counter, { from: 'orig', at: -1 })), InvalidRequestError, 'invalid_request');
    expectFlueError(await rejection(fork(Counter, { from: 'orig', at: 1.5 })), InvalidRequestError, 'invalid_request');
    // Nothing was created by a refused fork.
    expect(comparable(await exportConversation(Counter, 'orig'))).toEqual(comparable(before));
  });

  it('refuses a taken id and an instance never contacted', async () => {
    const taken = await rejection(fork(Counter, { from: 'orig', id: 'after-first' }));
    expectFlueError(taken, AgentInstanceExistsError, 'agent_instance_exists');
    expectFlueError(await rejection(fork(Counter, { from: 'nobody' })), AgentInstanceNotFoundError, 'agent_instance_not_found');
  });

  it('after a compaction answers from the summary, and refuses the cut at the compaction itself', async () => {
    const long = 'word '.repeat(120);
    server.script({ text: long, usage: { input: 3500, output: 100 } }, { text: 'SUMMARY OF THE EARLIER CONVERSATION' });
    await ask(Chatty, 'chatty', 'tell me a long story');
    const exported = await exportConversation(Chatty, 'chatty');
    expect(exported.at).toBe(exported.head);
    const compaction = seqOf(exported, 'compaction');
    expect(compaction).toBeLessThan(exported.head);
    expectFlueError(await rejection(fork(Chatty, { from: 'chatty', at: compaction })), ForkPointError, 'fork_point_unsettled');
    const { id } = await fork(Chatty, { from: 'chatty' });
    expect((await ask(Chatty, id, 'and then?')).text).toBe('heard: and then?');
    const next = server.requests.at(-1)!;
    expect(next.messages[0]!.content).toContain('SUMMARY OF THE EARLIER CONVERSATION');
    expect(next.messages.some((m) => m.content === 'tell me a long story')).toBe(false);
  });

  it('carries the child conversations of task calls, under the fork', async () => {
    await ask(Manager, 'manager', 'please /delegate');
    const { id } = await fork(Manager, { from: 'manager' });
    const [original, copied] = await Promise.all([childConversations(Manager, 'manager'), childConversations(Manager, id)]);
    expect(copied).toHaveLength(1);
    expect(copied.map((child) => child.snapshot.messages)).toEqual(original.map((child) => child.snapshot.messages));
    const forkId = (await exportConversation(Manager, id)).conversations[0]!.batches[0]!.records[0] as { conversationId: string };
    expect(copied[0]!.parentConversationId).toBe(forkId.conversationId);
    const exported = await exportConversation(Manager, id);
    const childBirth = exported.conversations[1]!.batches[0]!.records[0] as { parentConversationId?: string };
    expect(childBirth.parentConversationId).toBe(forkId.conversationId);
    expect(exported.conversations.map((c) => c.key)).toEqual([
      `agents/Manager/${id}`,
      expect.stringMatching(new RegExp(`^tasks/agents/Manager/${id}/`)),
    ]);
  });
});
