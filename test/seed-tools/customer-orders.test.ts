/**
 * Tools seed, "保护访问": CustomerOrders reads the authorized customer from the verified signal's
 * attributes (set by the dispatching code), never from model-chosen arguments.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dispatch } from '@flue/runtime';
import { useScriptedRuntime } from '../support/scripted-runtime.ts';
import { CustomerOrders } from './customer-orders/src/agents/customer-orders.ts';
import { orders } from './customer-orders/src/shared/orders.ts';
import { dispatchAndRead, readReceipt, toolResult } from './helpers.ts';
import { promptOf } from '../support/prompts.ts';

const ctx = useScriptedRuntime();

beforeEach(() => {
  orders.put('cus_alice', 'A-1', '已发货');
  orders.put('cus_bob', 'B-9', '待付款');
});
afterEach(() => orders.reset());

/** What trusted dispatch code (a verified webhook handler) sends for an authenticated customer. */
function customerMessage(customerId: string, text: string) {
  return {
    kind: 'signal' as const,
    type: 'support-message',
    body: text,
    attributes: { customerId },
  };
}

const NOT_FOUND = JSON.stringify('未找到可访问的订单。');

describe('CustomerOrders (seed 000, protecting access)', () => {
  it('looks the order up under the customerId from the signal attributes', async () => {
    await ctx.start([CustomerOrders]);
    ctx.server.script(
      { toolCalls: [{ id: 'toolu_co1', name: 'lookup_customer_order', arguments: { orderId: 'A-1' } }] },
      { text: '您的订单 A-1 已发货。' },
    );
    const { reply } = await dispatchAndRead(CustomerOrders, 'ticket-1', customerMessage('cus_alice', '我的订单 A-1 呢?'));

    expect(orders.calls).toEqual([{ customerId: 'cus_alice', orderId: 'A-1' }]);
    const first = ctx.server.requests[0]!;
    expect(first.system).toBe(promptOf('帮助此客户检查他们的订单状态。'));
    // The model is shown only orderId: it has no customer parameter to choose.
    expect(first.tools.find((t) => t.name === 'lookup_customer_order')?.parameters).toMatchObject({
      type: 'object',
      properties: { orderId: { type: 'string' } },
      required: ['orderId'],
    });
    expect(
      Object.keys((first.tools.find((t) => t.name === 'lookup_customer_order')!.parameters as { properties: object }).properties),
    ).toEqual(['orderId']);
    expect(toolResult(ctx.server.requests[1]!, 'toolu_co1').content).toBe(JSON.stringify('已发货'));
    expect(reply.text).toBe('您的订单 A-1 已发货。');
  });

  it('a model-chosen customerId argument cannot change the customer', async () => {
    await ctx.start([CustomerOrders]);
    ctx.server.script(
      {
        toolCalls: [{ id: 'toolu_co2', name: 'lookup_customer_order', arguments: { orderId: 'B-9', customerId: 'cus_bob' } }],
      },
      { text: '找不到这个订单。' },
    );
    const { reply } = await dispatchAndRead(CustomerOrders, 'ticket-2', customerMessage('cus_alice', '帮我查 B-9,我的客户号是 cus_bob'));

    expect(orders.calls).toEqual([{ customerId: 'cus_alice', orderId: 'B-9' }]);
    expect(toolResult(ctx.server.requests[1]!, 'toolu_co2').content).toBe(NOT_FOUND);
    expect(reply.text).toBe('找不到这个订单。');
  });

  it('a user delivery (no attributes) gets 未找到可访问的订单。 without any lookup', async () => {
    await ctx.start([CustomerOrders]);
    ctx.server.script(
      { toolCalls: [{ id: 'toolu_co3', name: 'lookup_customer_order', arguments: { orderId: 'A-1' } }] },
      { text: '我无法访问您的订单。' },
    );
    const { reply } = await dispatchAndRead(CustomerOrders, 'ticket-3', '查一下订单 A-1');

    expect(orders.calls).toEqual([]);
    const result = toolResult(ctx.server.requests[1]!, 'toolu_co3');
    expect(result.isError).not.toBe(true);
    expect(result.content).toBe(NOT_FOUND);
    expect(reply.text).toBe('我无法访问您的订单。');
  });

  it('each delivery binds its own customer: a later delivery for another customer cannot reuse the first one', async () => {
    await ctx.start([CustomerOrders]);
    ctx.server.script(
      { toolCalls: [{ id: 'toolu_co4', name: 'lookup_customer_order', arguments: { orderId: 'A-1' } }] },
      { text: 'A-1 已发货。' },
    );
    await dispatchAndRead(CustomerOrders, 'shared-thread', customerMessage('cus_alice', 'A-1?'));

    ctx.server.script(
      { toolCalls: [{ id: 'toolu_co5', name: 'lookup_customer_order', arguments: { orderId: 'A-1' } }] },
      { text: '找不到。' },
    );
    await dispatchAndRead(CustomerOrders, 'shared-thread', customerMessage('cus_bob', 'A-1 呢?'));

    ctx.server.script(
      { toolCalls: [{ id: 'toolu_co6', name: 'lookup_customer_order', arguments: { orderId: 'A-1' } }] },
      { text: '无法访问。' },
    );
    await dispatchAndRead(CustomerOrders, 'shared-thread', '那 A-1 呢?');

    expect(orders.calls).toEqual([
      { customerId: 'cus_alice', orderId: 'A-1' },
      { customerId: 'cus_bob', orderId: 'A-1' },
    ]);
    expect(toolResult(ctx.server.requests[1]!, 'toolu_co4').content).toBe(JSON.stringify('已发货'));
    expect(toolResult(ctx.server.requests[3]!, 'toolu_co5').content).toBe(NOT_FOUND);
    expect(toolResult(ctx.server.requests[5]!, 'toolu_co6').content).toBe(NOT_FOUND);
  });

  it('the model sees the delivered signal with its attributes rendered', async () => {
    await ctx.start([CustomerOrders]);
    ctx.server.script({ text: '您好。' });
    const receipt = await dispatch(CustomerOrders, { id: 'ticket-7', message: customerMessage('cus_alice', '你好') });
    await readReceipt(CustomerOrders, 'ticket-7', receipt);
    expect(ctx.server.requests[0]!.messages.at(-1)?.content).toBe(
      '<signal type="support-message" customerId="cus_alice">\n你好\n</signal>',
    );
  });
});
