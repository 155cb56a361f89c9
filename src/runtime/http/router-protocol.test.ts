/**
 * Protocol edges that a real conversation rarely reaches (a read that stops short of the head,
 * a stream wiped under an SSE connection, runtime failures), driven through a stub FlueRuntime
 * (streaming-protocol.md §3, §6; errors.md §2).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AgentRegistry } from '../authoring/identity.ts';
import type { ConversationStreamChunk } from '../engine/projection.ts';
import { buildAgentRouter } from './router.ts';
import { type FlueRuntime, type UpdatesResult, clearRuntime, configureRuntime } from '../host/runtime.ts';

function Support() {}

type UpdatesOptions = { waitMs: number; maxBatches: number; signal?: AbortSignal };
type Updates = (agent: string, id: string, afterSeq: number, options: UpdatesOptions) => Promise<UpdatesResult>;

let runtime: FlueRuntime;
let updates: ReturnType<typeof vi.fn<Updates>>;

beforeEach(() => {
  const registry = new AgentRegistry();
  registry.register(Support);
  updates = vi.fn<Updates>();
  const unused = () => {
    throw new Error('not used by this test');
  };
  runtime = {
    registry,
    admit: unused,
    read: unused,
    abort: unused,
    getInstance: unused,
    history: unused,
    childConversations: unused,
    usage: unused,
    streamHead: unused,
    updates,
    attachment: unused,
    exportConversation: unused,
    importConversation: unused,
  };
  configureRuntime(runtime);
});

afterEach(() => clearRuntime(runtime));

function chunk(batch: number): ConversationStreamChunk {
  return { type: 'message-completed', messageId: 'msg_1', conversationId: 'conv_1', position: { batch, index: 0 } };
}

function ok(chunks: ConversationStreamChunk[], nextSeq: number, upToDate: boolean, incarnation = 'inc_1'): UpdatesResult {
  return { kind: 'ok', incarnation, chunks, nextSeq, upToDate };
}

function get(path: string, init?: RequestInit, timing = { waitMs: 1_000, heartbeatMs: 60_000 }): Promise<Response> {
  return Promise.resolve(buildAgentRouter(Support, timing).fetch(new Request(`http://flue.test${path}`, init)));
}

describe('updates headers', () => {
  it('omits Stream-Up-To-Date when the read stopped short of the head; reads 100 batches without waiting', async () => {
    updates.mockResolvedValueOnce(ok([chunk(4)], 4, false));
    const response = await get('/t?view=updates&offset=0_3');
    expect(response.status).toBe(200);
    expect(response.headers.get('stream-next-offset')).toBe('0000000000000000_0000000000000004');
    expect(response.headers.has('stream-up-to-date')).toBe(false);
    expect(await response.json()).toEqual([{ type: 'stream-checkpoint', incarnation: 'inc_1' }, chunk(4)]);
    expect(updates).toHaveBeenCalledWith('Support', 't', 3, { waitMs: 0, maxBatches: 100 });
  });

  it('long-poll parks for the window with the request signal', async () => {
    updates.mockResolvedValueOnce(ok([], 3, true));
    const response = await get('/t?view=updates&offset=0_3&live=long-poll');
    expect(response.headers.get('stream-up-to-date')).toBe('true');
    expect(updates.mock.calls[0][3]).toMatchObject({ waitMs: 1_000, maxBatches: 100, signal: expect.any(AbortSignal) });
  });

  it('long-poll answers 499 when the wait rejects after the client went away', async () => {
    const client = new AbortController();
    updates.mockImplementationOnce(async () => {
      client.abort();
      throw new DOMException('aborted', 'AbortError');
    });
    const response = await get('/t?view=updates&offset=-1&live=long-poll', { signal: client.signal });
    expect(response.status).toBe(499);
    expect(await response.text()).toBe('');
  });

  it('a runtime failure is a 500 internal_error with a ref, never the original message', async () => {
    const log = vi.spyOn(console, 'error').mockImplementation(() => {});
    updates.mockRejectedValueOnce(new Error('disk on fire'));
    const response = await get('/t?view=updates&offset=-1', { headers: { traceparent: '00-aa-bb-01' } });
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(text).not.toContain('disk');
    const ref = JSON.parse(text).error.ref;
    expect(log).toHaveBeenCalledWith(`[flue] ${ref} traceparent=00-aa-bb-01`, expect.any(Error));
    log.mockRestore();
  });
});

describe('SSE loop', () => {
  it('loops at once while behind (control without upToDate), then waits for the window when caught up', async () => {
    updates
      .mockResolvedValueOnce(ok([chunk(0)], 0, false))
      .mockResolvedValueOnce(ok([chunk(1)], 1, true))
      .mockResolvedValueOnce({ kind: 'not_found' });
    const response = await get('/t?view=updates&offset=-1&live=sse');
    const body = await response.text();
    expect(body).toBe(
      [
        'event: data\ndata:[{"type":"stream-checkpoint","incarnation":"inc_1"}]\n\n',
        `event: data\ndata:${JSON.stringify([chunk(0)])}\n\n`,
        'event: control\ndata:{"streamNextOffset":"0000000000000000_0000000000000000"}\n\n',
        `event: data\ndata:${JSON.stringify([chunk(1)])}\n\n`,
        'event: control\ndata:{"streamNextOffset":"0000000000000000_0000000000000001","upToDate":true}\n\n',
      ].join(''),
    );
    expect(updates.mock.calls.map((call) => [call[2], call[3].waitMs])).toEqual([
      [-1, 0],
      [0, 0],
      [1, 1_000],
    ]);
  });

  it('ends the connection when the stream is recreated under it', async () => {
    updates.mockResolvedValueOnce(ok([], -1, true)).mockResolvedValueOnce(ok([chunk(0)], 0, true, 'inc_2'));
    const body = await (await get('/t?view=updates&offset=-1&live=sse')).text();
    expect(body).toBe(
      'event: data\ndata:[{"type":"stream-checkpoint","incarnation":"inc_1"}]\n\n' +
        'event: control\ndata:{"streamNextOffset":"-1","upToDate":true}\n\n',
    );
  });

  it('a failure after the headers are committed ends the stream and is logged', async () => {
    const log = vi.spyOn(console, 'error').mockImplementation(() => {});
    updates.mockResolvedValueOnce(ok([], -1, true)).mockRejectedValueOnce(new Error('store closed'));
    const response = await get('/t?view=updates&offset=-1&live=sse');
    expect(response.status).toBe(200);
    const body = await response.text();
    expect(body).not.toContain('store closed');
    expect(log).toHaveBeenCalledWith(expect.stringMatching(/^\[flue\] err_/), expect.objectContaining({ message: 'store closed' }));
    log.mockRestore();
  });

  it('decides 404 before committing the event stream', async () => {
    updates.mockResolvedValueOnce({ kind: 'not_found' });
    const response = await get('/t?view=updates&offset=-1&live=sse');
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect((await response.json()).error.type).toBe('stream_not_found');
  });
});

describe('agent lookup', () => {
  it('a router for an agent the runtime does not know is a logged 500', async () => {
    const log = vi.spyOn(console, 'error').mockImplementation(() => {});
    function Stranger() {}
    const response = await buildAgentRouter(Stranger).fetch(new Request('http://flue.test/t'));
    expect(response.status).toBe(500);
    expect(log.mock.calls[0][1]).toMatchObject({ message: expect.stringMatching(/"Stranger", which is not registered/) });
    log.mockRestore();
  });
});
