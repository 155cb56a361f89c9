/**
 * Tools seed, "输出": check_inventory with an output schema. Valid output is validated and sent
 * to the model; output not matching the schema becomes an error tool result.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ToolOutput } from '@flue/runtime';
import { useScriptedRuntime } from '../support/scripted-runtime.ts';
import { InventoryAssistant } from './check-inventory/src/agents/inventory-assistant.ts';
import { inventory } from './check-inventory/src/shared/inventory.ts';
import { checkInventory } from './check-inventory/src/tools/check-inventory.ts';
import { dispatchAndRead, toolResult } from './helpers.ts';

const ctx = useScriptedRuntime();

afterEach(() => inventory.reset());

// Compile-time: the output schema types the recorded output.
type Output = ToolOutput<typeof checkInventory>;
const typed: Output = { inStock: 1, warehouse: 'W' };
void typed;

describe('check_inventory (seed 000, output schema)', () => {
  it('a matching output is validated and reaches the model as JSON', async () => {
    inventory.put('SKU-1', { inStock: 12, warehouse: 'east' });
    await ctx.start([InventoryAssistant]);
    ctx.server.script(
      { toolCalls: [{ id: 'toolu_inv1', name: 'check_inventory', arguments: { sku: 'SKU-1' } }] },
      { text: '东部仓库有 12 件。' },
    );
    const { reply } = await dispatchAndRead(InventoryAssistant, 'inv-ok', 'SKU-1 还有货吗?');

    const tool = ctx.server.requests[0]!.tools.find((t) => t.name === 'check_inventory');
    expect(tool?.parameters).toMatchObject({ type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] });
    expect(inventory.calls).toEqual(['SKU-1']);
    const result = toolResult(ctx.server.requests[1]!, 'toolu_inv1');
    expect(result.isError).not.toBe(true);
    expect(result.content).toBe('{"inStock":12,"warehouse":"east"}');
    expect(reply.text).toBe('东部仓库有 12 件。');
  });

  it('the output schema strips undeclared keys before the model sees the output', async () => {
    inventory.put('SKU-2', { inStock: 3, warehouse: 'west', supplierCost: 41.5 });
    await ctx.start([InventoryAssistant]);
    ctx.server.script({ toolCalls: [{ id: 'toolu_inv2', name: 'check_inventory', arguments: { sku: 'SKU-2' } }] }, { text: 'ok' });
    await dispatchAndRead(InventoryAssistant, 'inv-strip', 'SKU-2?');
    expect(toolResult(ctx.server.requests[1]!, 'toolu_inv2').content).toBe('{"inStock":3,"warehouse":"west"}');
  });

  it('an output that does not match the schema becomes an error tool result; the conversation continues', async () => {
    inventory.put('SKU-3', { inStock: 'lots', warehouse: 'north' });
    await ctx.start([InventoryAssistant]);
    ctx.server.script(
      { toolCalls: [{ id: 'toolu_inv3', name: 'check_inventory', arguments: { sku: 'SKU-3' } }] },
      { text: '库存系统返回了无效数据。' },
    );
    const { reply } = await dispatchAndRead(InventoryAssistant, 'inv-bad', 'SKU-3?');

    expect(inventory.calls).toEqual(['SKU-3']);
    const result = toolResult(ctx.server.requests[1]!, 'toolu_inv3');
    expect(result.isError).toBe(true);
    expect(result.content).toBe(
      'Tool "check_inventory" returned output that does not match its output schema: Invalid type: Expected number but received "lots" (at inStock).',
    );
    expect(reply.text).toBe('库存系统返回了无效数据。');
  });

  it('a missing output (undefined) under an output schema is an error result', async () => {
    inventory.put('SKU-4', undefined);
    await ctx.start([InventoryAssistant]);
    ctx.server.script({ toolCalls: [{ id: 'toolu_inv4', name: 'check_inventory', arguments: { sku: 'SKU-4' } }] }, { text: 'done' });
    await dispatchAndRead(InventoryAssistant, 'inv-undef', 'SKU-4?');
    const result = toolResult(ctx.server.requests[1]!, 'toolu_inv4');
    expect(result.isError).toBe(true);
    expect(result.content).toMatch(/^Tool "check_inventory" returned output that does not match its output schema: /);
  });
});
