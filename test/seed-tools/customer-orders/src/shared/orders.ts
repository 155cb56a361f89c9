/**
 * Test double for the seed's `../shared/orders.ts` (CustomerOrders): orders are owned by a
 * customer, and `getStatus` only finds an order under its owner. Every lookup is recorded.
 */
const owned = new Map<string, Map<string, string>>();
const calls: { customerId: string; orderId: string }[] = [];

export const orders = {
  calls,
  put(customerId: string, orderId: string, status: string): void {
    let byOrder = owned.get(customerId);
    if (byOrder === undefined) owned.set(customerId, (byOrder = new Map()));
    byOrder.set(orderId, status);
  },
  reset(): void {
    owned.clear();
    calls.length = 0;
  },
  async getStatus(customerId: string, orderId: string): Promise<string | undefined> {
    calls.push({ customerId, orderId });
    return owned.get(customerId)?.get(orderId);
  },
};
