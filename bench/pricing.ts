/**
 * What a turn costs on Cloudflare's published price list: the meters of one turn in, dollars per
 * million turns out, line by line. Pure arithmetic, no node:* imports; bench/node/wrangler-cpu.ts
 * feeds it the figures it measures. Where each price comes from, and the date it was read, is in
 * bench/README.md ("The bill in dollars").
 *
 * Marginal prices on the Workers Paid plan: the monthly allowances (10 million Worker requests,
 * 1 million object requests, 400,000 GB-s, 50 million rows written, 5 GB-month, …) and the $5
 * subscription are left out, because a million turns is a unit of scale, not a month's traffic.
 */

/** Dollars per unit, from Cloudflare's Workers and Durable Objects pricing pages (read 2026-12-04). */
export const PRICES = {
  /** Workers Standard: "+$0.30 per additional million" requests. */
  workerRequest: 0.3 / 1e6,
  /** Workers Standard: "+$0.02 per additional million CPU milliseconds". */
  workerCpuMs: 0.02 / 1e6,
  /** Durable Objects: "+ $0.15/million" requests (RPC sessions, HTTP requests, alarm invocations). */
  objectRequest: 0.15 / 1e6,
  /** Durable Objects: "+ $12.50/million GB-s" of duration. */
  objectGbSecond: 12.5 / 1e6,
  /** SQLite storage backend: "$0.001 / million rows" read. */
  rowRead: 0.001 / 1e6,
  /** SQLite storage backend: "$1.00 / million rows" written (each setAlarm is one row). */
  rowWritten: 1 / 1e6,
  /** SQLite storage backend: "$0.20/ GB-month" of stored data. */
  gbMonth: 0.2,
} as const;

/** "Duration billing charges for the 128 MB of memory your Durable Object is allocated, regardless of actual usage." */
export const OBJECT_MEMORY_GB = 128 / 1024;

/** Bytes in a billed GB (decimal, as storage is sold). */
const GB = 1e9;

/** What one turn uses of each billed meter, on one side (ours, bare, the Agents SDK). */
export interface TurnUsage {
  /** Inbound requests to the Worker. */
  workerRequests: number;
  /** CPU ms billed as Workers CPU (the bench charges all of workerd's CPU here: see README). */
  workerCpuMs: number;
  /** RPC calls and alarm invocations the conversation's object received. */
  objectRequests: number;
  /** Wall-clock ms the object is held awake by the turn (128 MB billed for each of them). */
  objectAwakeMs: number;
  rowsRead: number;
  /** SQL rows, setAlarm calls and KV writes: rows as billed. */
  rowsWritten: number;
  /** Bytes the turn leaves stored in the object's SQLite database. */
  bytesStored: number;
}

export const BILL_LINES = [
  'Workers requests',
  'Workers CPU',
  'DO requests',
  'DO duration',
  'rows read',
  'rows written',
  'storage (per month kept)',
] as const;
export type BillLine = (typeof BILL_LINES)[number];

/** Dollars per million turns, by line. */
export type Bill = Record<BillLine, number>;

export function billPerMillionTurns(usage: TurnUsage): Bill {
  const million = 1e6;
  return {
    'Workers requests': usage.workerRequests * PRICES.workerRequest * million,
    'Workers CPU': usage.workerCpuMs * PRICES.workerCpuMs * million,
    'DO requests': usage.objectRequests * PRICES.objectRequest * million,
    'DO duration': (usage.objectAwakeMs / 1000) * OBJECT_MEMORY_GB * PRICES.objectGbSecond * million,
    'rows read': usage.rowsRead * PRICES.rowRead * million,
    'rows written': usage.rowsWritten * PRICES.rowWritten * million,
    // A month of keeping what the turns left: it recurs every month the conversation is kept.
    'storage (per month kept)': ((usage.bytesStored * million) / GB) * PRICES.gbMonth,
  };
}

export function billTotal(bill: Bill): number {
  return BILL_LINES.reduce((total, line) => total + bill[line], 0);
}

/** The line that costs the most, and its share of the total. */
export function dominantLine(bill: Bill): { line: BillLine; share: number } {
  const line = BILL_LINES.reduce((most, next) => (bill[next] > bill[most] ? next : most));
  const total = billTotal(bill);
  return { line, share: total === 0 ? 0 : bill[line] / total };
}

/** "$1.23", with cents down to a tenth of a cent for the small lines. */
export function dollars(amount: number): string {
  return amount >= 10 ? `$${amount.toFixed(2)}` : amount >= 0.01 ? `$${amount.toFixed(3)}` : `$${amount.toFixed(4)}`;
}
