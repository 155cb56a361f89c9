/**
 * Tools seed, "有界工具": lookup_catalog (timeoutMs: 15_000, fetch with the call's signal).
 *
 * The seed hardcodes https://catalog.example.com, which this sandbox cannot reach, and a real
 * 15 s deadline is too slow for a unit test. So: the seed's tool is loaded unmodified, shown to
 * the model and run against a stubbed `fetch`; the timeout contract is then demonstrated with an
 * equivalent tool (same shape, short timeoutMs) whose fetch targets a local server that never
 * answers.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import * as v from 'valibot';
import { defineTool, useModel, useTool } from '@flue/runtime';
import { useScriptedRuntime } from '../support/scripted-runtime.ts';
import { CatalogAssistant } from './lookup-catalog/src/agents/catalog-assistant.ts';
import { lookupCatalog } from './lookup-catalog/src/tools/lookup-catalog.ts';
import { dispatchAndRead, settleIo, toolResult } from './helpers.ts';

const ctx = useScriptedRuntime();

// ── A local upstream that accepts requests and never answers ────────────────────────────────
let upstream: Server;
let upstreamUrl = '';
const upstreamRequests: { url: string; closedBeforeReply: Promise<void> }[] = [];
const hanging = new Set<ServerResponse>();

beforeAll(async () => {
  upstream = createServer((req: IncomingMessage, res: ServerResponse) => {
    hanging.add(res);
    const closedBeforeReply = new Promise<void>((resolve) => res.on('close', () => resolve()));
    upstreamRequests.push({ url: req.url ?? '', closedBeforeReply });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const res of hanging) res.destroy();
  await new Promise<void>((resolve) => {
    upstream.close(() => resolve());
    upstream.closeAllConnections();
  });
});

afterEach(() => {
  vi.unstubAllGlobals();
  upstreamRequests.length = 0;
});

/** The seed's tool with the upstream and deadline made injectable; nothing else differs. */
function boundedCatalogTool(baseUrl: string, timeoutMs: number) {
  return defineTool({
    name: 'lookup_catalog',
    description: '查询上游目录 API。',
    input: v.object({ sku: v.string() }),
    timeoutMs,
    async run({ data, signal }) {
      const response = await fetch(`${baseUrl}/${data.sku}`, { signal });
      return { output: await response.json() };
    },
  });
}

describe('lookup_catalog (seed 000, bounded tool)', () => {
  it('the seed definition loads with its deadline and is shown to the model with its JSON Schema', async () => {
    expect(lookupCatalog.timeoutMs).toBe(15_000);
    await ctx.start([CatalogAssistant]);
    ctx.server.script({ text: '请提供 SKU。' });
    await dispatchAndRead(CatalogAssistant, 'cat-schema', '查目录');
    const tool = ctx.server.requests[0]!.tools.find((t) => t.name === 'lookup_catalog');
    expect(tool).toEqual({
      name: 'lookup_catalog',
      description: '查询上游目录 API。',
      parameters: expect.objectContaining({
        type: 'object',
        properties: { sku: { type: 'string' } },
        required: ['sku'],
      }),
    });
  });

  it('the seed tool fetches its URL with the call signal and returns the JSON body', async () => {
    const seen: { url: string; signal: AbortSignal | null | undefined }[] = [];
    const realFetch = globalThis.fetch;
    // Only the catalog host is stubbed; the model client's own requests go through untouched.
    vi.stubGlobal('fetch', async (input: RequestInfo | URL, init?: RequestInit) => {
      if (!String(input).startsWith('https://catalog.example.com/')) return realFetch(input, init);
      seen.push({ url: String(input), signal: init?.signal });
      return new Response(JSON.stringify({ sku: 'SKU-9', price: 1999 }), {
        headers: { 'content-type': 'application/json' },
      });
    });
    await ctx.start([CatalogAssistant]);
    ctx.server.script({ toolCalls: [{ id: 'toolu_cat1', name: 'lookup_catalog', arguments: { sku: 'SKU-9' } }] }, { text: '价格 19.99。' });
    const { reply } = await dispatchAndRead(CatalogAssistant, 'cat-ok', 'SKU-9 多少钱?');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.url).toBe('https://catalog.example.com/SKU-9');
    expect(seen[0]!.signal).toBeInstanceOf(AbortSignal);
    expect(seen[0]!.signal!.aborted).toBe(false);
    expect(toolResult(ctx.server.requests[1]!, 'toolu_cat1').content).toBe('{"sku":"SKU-9","price":1999}');
    expect(reply.text).toBe('价格 19.99。');
  });

  it('a hung upstream: the call times out, the fetch is aborted, the model sees the timeout text and continues', async () => {
    const tool = boundedCatalogTool(upstreamUrl, 150);
    function BoundedCatalog() {
      useModel('anthropic/claude-haiku-4-5');
      useTool(tool);
      return '回答目录问题。';
    }
    await ctx.start([BoundedCatalog]);
    ctx.server.script(
      { toolCalls: [{ id: 'toolu_slow', name: 'lookup_catalog', arguments: { sku: 'SKU-7' } }] },
      { text: '目录服务超时了,请稍后再试。' },
    );
    const started = Date.now();
    const { reply } = await dispatchAndRead(BoundedCatalog, 'cat-timeout', 'SKU-7?');
    const elapsed = Date.now() - started;

    expect(upstreamRequests.map((r) => r.url)).toEqual(['/SKU-7']);
    // Aborting ctx.signal cancelled the in-flight fetch: the upstream connection went away.
    await expect(Promise.race([upstreamRequests[0]!.closedBeforeReply.then(() => 'closed'), settleIo().then(() => 'open')])).resolves.toBe(
      'closed',
    );

    const second = ctx.server.requests[1]!;
    const result = toolResult(second, 'toolu_slow');
    expect(result.isError).toBe(true);
    expect(result.content).toBe('Tool "lookup_catalog" timed out after 150ms');
    expect(reply.text).toBe('目录服务超时了,请稍后再试。');
    expect(ctx.server.requests).toHaveLength(2);
    // Not before the tool's deadline; that it did not wait for the upstream shows in the closed
    // connection and the timeout result above.
    expect(elapsed).toBeGreaterThanOrEqual(140);
  });

  it('a run that ignores its signal still times out; its late result is discarded', async () => {
    let lateSettled = false;
    let signalReason: unknown;
    const stubborn = defineTool({
      name: 'lookup_catalog',
      description: '查询上游目录 API。',
      input: v.object({ sku: v.string() }),
      timeoutMs: 60,
      async run({ signal }) {
        signal?.addEventListener('abort', () => {
          signalReason = signal.reason;
        });
        await new Promise((resolve) => setTimeout(resolve, 200));
        lateSettled = true;
        return { output: { price: 1 } };
      },
    });
    function StubbornCatalog() {
      useModel('anthropic/claude-haiku-4-5');
      useTool(stubborn);
      return '回答目录问题。';
    }
    await ctx.start([StubbornCatalog]);
    ctx.server.script({ toolCalls: [{ id: 'toolu_stub', name: 'lookup_catalog', arguments: { sku: 'S' } }] }, { text: '超时。' });
    const { reply } = await dispatchAndRead(StubbornCatalog, 'cat-stubborn', 'S?');
    expect(reply.text).toBe('超时。');
    const result = toolResult(ctx.server.requests[1]!, 'toolu_stub');
    expect(result.content).toBe('Tool "lookup_catalog" timed out after 60ms');
    expect((signalReason as Error | undefined)?.name).toBe('ToolTimeoutError');

    // Let the abandoned run finish: nothing new reaches the model.
    await vi.waitFor(() => expect(lateSettled).toBe(true), { timeout: 2_000, interval: 20 });
    await settleIo();
    expect(ctx.server.requests).toHaveLength(2);
  });
});
