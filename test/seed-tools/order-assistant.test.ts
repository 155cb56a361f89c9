/**
 * Tools seed, "你的第一个工具": src/tools/lookup-order.ts + src/agents/order-assistant.ts run
 * unmodified on start() against the scripted model.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { useScriptedRuntime } from '../support/scripted-runtime.ts';
import { OrderAssistant } from './order-assistant/src/agents/order-assistant.ts';
import { orders } from './order-assistant/src/shared/orders.ts';
import { lookupOrder } from './order-assistant/src/tools/lookup-order.ts';
import { dispatchAndRead, toolNames, toolResult } from './helpers.ts';
import { promptOf } from '../support/prompts.ts';

const ctx = useScriptedRuntime();

afterEach(() => orders.reset());

describe('lookup_order / OrderAssistant (seed 000)', () => {
  it('defineTool returns a frozen definition', () => {
    expect(Object.isFrozen(lookupOrder)).toBe(true);
    expect(lookupOrder.name).toBe('lookup_order');
  });

  it('shows the model the tool name, description and JSON Schema, and the agent instructions', async () => {
    await ctx.start([OrderAssistant]);
    ctx.server.script({ text: '你好!请告诉我订单号。' });
    const { reply } = await dispatchAndRead(OrderAssistant, 'oa-schema', '我的订单在哪?');
    expect(reply.text).toBe('你好!请告诉我订单号。');

    const [request] = ctx.server.requests;
    expect(request!.system).toBe(promptOf('帮助客户检查他们的订单状态。'));
    const tool = request!.tools.find((t) => t.name === 'lookup_order');
    expect(tool).toBeDefined();
    expect(tool!.description).toBe('通过 ID 查询一个订单并返回其当前状态。');
    expect(tool!.parameters).toMatchObject({
      type: 'object',
      properties: { orderId: { type: 'string' } },
      required: ['orderId'],
    });
    expect(request!.messages.at(-1)).toMatchObject({ role: 'user', content: '我的订单在哪?' });
  });

  it('runs the tool with the parsed orderId and returns {status, eta} to the model', async () => {
    orders.put('A-1001', { status: 'shipped', eta: '2026-02-03', internalNote: 'never shown' });
    await ctx.start([OrderAssistant]);
    ctx.server.script(
      { toolCalls: [{ id: 'toolu_lookup1', name: 'lookup_order', arguments: { orderId: 'A-1001' } }] },
      { text: '您的订单已发货,预计 2026-02-03 送达。' },
    );
    const { reply } = await dispatchAndRead(OrderAssistant, 'oa-1', '订单 A-1001 到哪了?');

    expect(orders.calls).toEqual(['A-1001']);
    expect(ctx.server.requests).toHaveLength(2);
    const second = ctx.server.requests[1]!;
    const result = toolResult(second, 'toolu_lookup1');
    expect(result.content).toBe(JSON.stringify({ status: 'shipped', eta: '2026-02-03' }));
    expect(result.isError).not.toBe(true);
    // The tool call the model made is replayed before its result.
    const assistant = second.messages.find((m) => m.role === 'assistant');
    expect(assistant?.toolCalls).toEqual([{ id: 'toolu_lookup1', name: 'lookup_order', arguments: { orderId: 'A-1001' } }]);
    expect(toolNames(second)).toContain('lookup_order');
    expect(reply.text).toBe('您的订单已发货,预计 2026-02-03 送达。');
  });

  it('invalid arguments never reach run: the model gets an error result naming the schema problem and can retry', async () => {
    orders.put('7', { status: 'processing', eta: 'tomorrow' });
    await ctx.start([OrderAssistant]);
    ctx.server.script(
      { toolCalls: [{ id: 'toolu_bad', name: 'lookup_order', arguments: { orderId: 7 } }] },
      { toolCalls: [{ id: 'toolu_good', name: 'lookup_order', arguments: { orderId: '7' } }] },
      { text: '订单 7 正在处理中。' },
    );
    const { reply } = await dispatchAndRead(OrderAssistant, 'oa-bad', '查一下订单 7');

    const second = ctx.server.requests[1]!;
    const bad = toolResult(second, 'toolu_bad');
    expect(bad.isError).toBe(true);
    expect(bad.content).toMatch(/^Arguments for tool "lookup_order" do not match the required schema: /);
    expect(bad.content).toContain('(at orderId)');
    expect(bad.content).toMatch(/Expected string but received 7/);
    expect(bad.content).toMatch(/Call the tool again with corrected arguments\.$/);
    // run saw only the corrected call.
    expect(orders.calls).toEqual(['7']);
    const third = ctx.server.requests[2]!;
    expect(toolResult(third, 'toolu_good').content).toBe('{"status":"processing","eta":"tomorrow"}');
    expect(reply.text).toBe('订单 7 正在处理中。');
  });

  it('a throwing run becomes an error tool result and the conversation continues', async () => {
    await ctx.start([OrderAssistant]);
    ctx.server.script(
      { toolCalls: [{ id: 'toolu_missing', name: 'lookup_order', arguments: { orderId: 'NOPE' } }] },
      { text: '没有找到这个订单。' },
    );
    const { reply } = await dispatchAndRead(OrderAssistant, 'oa-throw', '订单 NOPE?');
    expect(orders.calls).toEqual(['NOPE']);
    const result = toolResult(ctx.server.requests[1]!, 'toolu_missing');
    expect(result.isError).toBe(true);
    expect(result.content).toBe('Order NOPE does not exist.');
    expect(reply.text).toBe('没有找到这个订单。');
  });
});
