/**
 * Test double for the seed's `../shared/orders.ts` (lookup_order): an in-memory order table that
 * records every lookup.
 */
export interface Order {
  status: string;
  eta: string;
  /** Extra fields the tool must not forward to the model. */
  internalNote?: string;
}

const table = new Map<string, Order>();
const calls: string[] = [];

export const orders = {
  /** Order ids `get` was called with, in call order. */
  calls,
  put(orderId: string, order: Order): void {
    table.set(orderId, order);
  },
  reset(): void {
    table.clear();
    calls.length = 0;
  },
  async get(orderId: string): Promise<Order> {
    calls.push(orderId);
    const order = table.get(orderId);
    if (order === undefined) throw new Error(`Order ${orderId} does not exist.`);
    return order;
  },
};
