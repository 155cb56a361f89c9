/**
 * Interop of the unmodified `@flue/react` 2.0.3 `useFlueAgent()` hook with `createAgentRouter()` on
 * the Node host. No browser and no renderer package is installed, so the hook runs in the minimal
 * headless hook host of support/react-hooks.ts (React's own `react` package, our dispatcher).
 */
import { describe, expect, it } from 'vitest';
import { useFlueAgent, type UseFlueAgentResult } from '@flue/react';
import { MOUNT, useNodeHost } from './support/node-host.ts';
import { eventually, replyMessage, textOf, withTimeout } from './support/observation.ts';
import { ALL_TEXT, FIRST_TEXT, Support, expectOrderReply, orderReplySteps } from './support/order-script.ts';
import { reactVersion, renderHook } from './support/react-hooks.ts';
import { protocolViolations } from './support/wire-tap.ts';

const { ctx, host } = useNodeHost();

const assistantText = (result: UseFlueAgentResult) => textOf(result.messages.find((m) => m.role === 'assistant'));

describe(`useFlueAgent() (react ${reactVersion}, headless hook host)`, () => {
  it('default SSE mode from a url: absent → optimistic send → streaming → idle, messages equal to history', async () => {
    const h = await host(Support);
    const url = `${h.http.url}${MOUNT}/t-react`;
    const hook = renderHook(() => useFlueAgent({ url }));
    try {
      const ready = await hook.until((r) => r.historyReady, 5_000, 'historyReady');
      expect(ready).toMatchObject({ status: 'idle', messages: [], error: undefined, failedSends: [], settlements: [] });

      ctx.server.script(...orderReplySteps(120));
      const sending = hook.current.sendMessage('Where is A-1?');
      const optimistic = await hook.until((r) => r.messages.length === 1, 2_000, 'the optimistic echo');
      expect(optimistic.status).toBe('submitted');
      expect(optimistic.messages[0]).toEqual({
        id: 'local:1',
        role: 'user',
        purpose: 'user',
        display: 'visible',
        parts: [{ type: 'text', text: 'Where is A-1?', state: 'done' }],
      });
      await sending;

      const streaming = await hook.until(
        (r) => r.status === 'streaming' && assistantText(r).length > FIRST_TEXT.length,
        15_000,
        'streaming final text',
      );
      expect(ALL_TEXT.startsWith(assistantText(streaming))).toBe(true);
      expect(assistantText(streaming)).not.toBe(ALL_TEXT);
      const done = await hook.until((r) => r.status === 'idle' && r.settlements.length === 1, 15_000, 'idle after settlement');
      expect(done.error).toBeUndefined();

      const client = (await import('@flue/sdk')).createFlueClient({ url });
      const history = await client.history();
      expect(done.settlements).toEqual(history.settlements);
      // The hook keeps the optimistic id for the canonical user message; everything else is history.
      const [user, ...rest] = history.messages;
      expect(done.messages).toEqual([{ ...user, id: 'local:1' }, ...rest]);
      expectOrderReply(history, history.settlements[0]!.submissionId);
      expect(textOf(replyMessage(done.messages, history.settlements[0]!.submissionId))).toBe(ALL_TEXT);
      // The hook followed over SSE.
      expect(h.http.requests.some((r) => r.path.includes('live=sse'))).toBe(true);
    } finally {
      hook.unmount();
    }
    // Unmounting closes the observation: its SSE connection goes away.
    await eventually(
      () => h.http.requests.filter((r) => r.path.includes('live=sse')).every((r) => r.outcome !== undefined),
      5_000,
      'the SSE connection to close',
    );
  });

  it('long-poll mode with a custom client: a failed settlement puts the hook in error with the settlement message', async () => {
    const h = await host(Support);
    const client = h.client('t-react-fail');
    const hook = renderHook(() => useFlueAgent({ client, live: 'long-poll' }));
    try {
      await hook.until((r) => r.historyReady, 5_000, 'historyReady');
      ctx.server.script({ text: 'Fine.' }, { status: 400, errorBody: 'The model refused the request.' });
      await hook.current.sendMessage('First');
      await hook.until((r) => r.status === 'idle' && r.settlements.length === 1, 10_000, 'the first reply');
      expect(assistantText(hook.current)).toBe('Fine.');
      await hook.current.sendMessage('Second');
      const failed = await hook.until((r) => r.status === 'error', 10_000, 'error status');
      const history = await client.history();
      const settlement = history.settlements.at(-1)!;
      expect(settlement.outcome).toBe('failed');
      expect(failed.error?.message).toBe((settlement.error as { message: string }).message);
      expect(failed.settlements).toEqual(history.settlements);
      expect(h.tap.exchanges.some((e) => e.url.searchParams.get('live') === 'long-poll')).toBe(true);
    } finally {
      hook.unmount();
    }
    await withTimeout(h.tap.settled(), 5_000, 'recorded bodies');
    expect(protocolViolations(h.tap.exchanges)).toEqual([]);
  });

  it('a send the server rejects stays visible as a failed send with the FlueApiError', async () => {
    const h = await host(Support);
    const client = h.client('t-react-reject');
    const hook = renderHook(() => useFlueAgent({ client }));
    try {
      await hook.until((r) => r.historyReady, 5_000, 'historyReady');
      // The server refuses a malformed attachment (invalid_request); the hook keeps the optimistic message.
      const bad = { type: 'image' as const, data: 42 as unknown as string, mimeType: 'image/png' };
      await expect(hook.current.sendMessage('Look', { images: [bad] })).rejects.toMatchObject({ name: 'FlueApiError', status: 400 });
      const failed = await hook.until((r) => r.failedSends.length === 1, 2_000, 'a failed send');
      expect(failed.status).toBe('error');
      expect(failed.failedSends[0]).toMatchObject({
        id: 'local:1',
        message: 'Look',
        error: { status: 400, body: { error: { type: 'invalid_request' } } },
      });
      expect(failed.messages.map((m) => m.id)).toEqual(['local:1']);
    } finally {
      hook.unmount();
    }
  });
});
