// The seed shows this definition inline in its "输出" paragraph; this module adds only the
// imports it needs and an export. The defineTool text below is verbatim.
import { defineTool } from '@flue/runtime';
import * as v from 'valibot';
import { inventory } from '../shared/inventory.ts';

const checkInventory = defineTool({
  name: 'check_inventory',
  description: '检查一个 SKU 的库存水平。',
  input: v.object({ sku: v.string() }),
  output: v.object({ inStock: v.number(), warehouse: v.string() }),
  async run({ data }) {
    return { output: await inventory.lookup(data.sku) };
  },
});

export { checkInventory };
