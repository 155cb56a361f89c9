/**
 * Test double for `inventory`: returns whatever the test stocked for a SKU (deliberately typed
 * loosely, so a test can stock a value that breaks the tool's output schema) and records calls.
 */
const stock = new Map<string, unknown>();
const calls: string[] = [];

export const inventory = {
  calls,
  put(sku: string, level: unknown): void {
    stock.set(sku, level);
  },
  reset(): void {
    stock.clear();
    calls.length = 0;
  },
  // `any` mirrors an untyped upstream client: the output schema is what guards the shape.
  async lookup(sku: string): Promise<any> {
    calls.push(sku);
    if (!stock.has(sku)) throw new Error(`Unknown SKU ${sku}.`);
    return stock.get(sku);
  },
};
