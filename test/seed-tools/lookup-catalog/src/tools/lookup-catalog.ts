import { defineTool } from '@flue/runtime';
import * as v from 'valibot';

export const lookupCatalog = defineTool({
  name: 'lookup_catalog',
  description: '查询上游目录 API。',
  input: v.object({ sku: v.string() }),
  timeoutMs: 15_000,
  async run({ data, signal }) {
    const response = await fetch(`https://catalog.example.com/${data.sku}`, { signal });
    // …
    return { output: await response.json() };
  },
});
