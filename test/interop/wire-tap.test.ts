/**
 * The wire checker of the interop tests (support/wire-tap.ts) catches what it claims to: a
 * conformant exchange passes, each kind of deviation is reported.
 */
import { describe, expect, it } from 'vitest';
import { protocolViolations, type Exchange, type SseEvent } from './support/wire-tap.ts';

const BASE = 'http://x.test/agents/support/t';
const SECURITY = { 'x-content-type-options': 'nosniff', 'cross-origin-resource-policy': 'cross-origin' };
const CHECKPOINT = { type: 'stream-checkpoint', incarnation: 'inc_1' };
const off = (n: number) => `0000000000000000_${String(n).padStart(16, '0')}`;
const delta = (batch: number, index: number, extra: object = {}) => ({
  type: 'message-delta',
  conversationId: 'conv_1',
  messageId: 'msg_1',
  kind: 'text',
  delta: 'x',
  position: { batch, index },
  ...extra,
});

function updates(query: string, json: unknown, headers: Record<string, string> = {}): Exchange {
  return {
    method: 'GET',
    url: new URL(`${BASE}?view=updates&${query}`),
    status: 200,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...SECURITY, ...headers },
    startedAt: 0,
    answeredAt: 0,
    json,
    done: Promise.resolve(),
  };
}

function sse(query: string, events: [string, unknown][]): Exchange {
  return {
    method: 'GET',
    url: new URL(`${BASE}?view=updates&${query}&live=sse`),
    status: 200,
    headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...SECURITY },
    startedAt: 0,
    answeredAt: 0,
    events: events.map(([event, data]): SseEvent => ({ event, data: JSON.stringify(data), at: 0 })),
    heartbeats: 0,
    done: Promise.resolve(),
  };
}

describe('protocolViolations()', () => {
  it('passes conformant plain, long-poll and SSE reads', () => {
    expect(
      protocolViolations([
        updates(`offset=${off(1)}`, [CHECKPOINT, delta(2, 0), delta(2, 1), delta(3, 0)], {
          'stream-next-offset': off(3),
          'stream-up-to-date': 'true',
        }),
        updates(`offset=${off(3)}&live=long-poll`, [CHECKPOINT], { 'stream-next-offset': off(3), 'stream-up-to-date': 'true' }),
        sse(`offset=${off(1)}`, [
          ['data', [CHECKPOINT]],
          ['data', [delta(2, 0)]],
          ['control', { streamNextOffset: off(2) }],
          ['control', { streamNextOffset: off(2), upToDate: true }],
        ]),
      ]),
    ).toEqual([]);
  });

  it('reports each deviation', () => {
    const problems = protocolViolations([
      updates(`offset=${off(1)}`, [delta(2, 0)], { 'stream-next-offset': off(2) }),
      updates(`offset=${off(1)}`, [CHECKPOINT, delta(2, 1), delta(2, 0)], { 'stream-next-offset': off(2), 'stream-up-to-date': 'false' }),
      updates(
        `offset=${off(1)}`,
        [CHECKPOINT, delta(1, 0), delta(5, 0), { type: 'log', conversationId: 'c', position: { batch: 5, index: 1 } }],
        {
          'stream-next-offset': off(4),
        },
      ),
      updates(`offset=${off(1)}`, [CHECKPOINT, delta(2, 0, { timestamp: 'now' })], { 'stream-next-offset': off(2) }),
      sse(`offset=${off(1)}`, [
        ['data', [delta(2, 0)]],
        ['data', [delta(3, 0)]],
        ['data', [delta(4, 0)]],
        ['control', { streamNextOffset: off(2), upToDate: false }],
      ]),
    ]);
    const expected = [
      /does not start with a checkpoint/,
      /Stream-Up-To-Date present but not "true"/,
      /position .* not after/,
      /at or before the request offset/,
      /beyond the next offset/,
      /unknown chunk/,
      /message-delta with a timestamp/,
      /first SSE event is not data:\[checkpoint\]/,
      /two data events without a control/,
      /upToDate present but not true/,
    ];
    for (const pattern of expected)
      expect(
        problems.some((p) => pattern.test(p)),
        `${pattern}\n${problems.join('\n')}`,
      ).toBe(true);
  });
});
