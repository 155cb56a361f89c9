/** The example's order book: a stand-in for a real order service. */
const book: Record<string, { status: string; eta: string }> = {
  '7': { status: 'shipped', eta: '2026-12-02' },
  '42': { status: 'packing', eta: '2026-12-04' },
};

export const orders = {
  async get(orderId: string): Promise<{ status: string; eta: string }> {
    const order = book[orderId];
    if (order === undefined) throw new Error(`No order with id ${orderId}.`);
    return order;
  },
};
