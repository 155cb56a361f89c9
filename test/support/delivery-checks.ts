/**
 * Test support: the delivery guarantees a load test checks, against one conversation's durable
 * ledger (`flue_submissions`) and log (`flue_log`) as its host stored them. No node:* imports:
 * the Node and the workerd load tests both use it.
 */
import { expect } from 'vitest';
import { unpackRecords } from '../../src/runtime/store/record-packing.ts';
import type { ConversationRecord } from '../../src/runtime/store/records.ts';
import { LOG_ROWS } from './log-sql.ts';

export interface DurableConversation {
  /** The ledger in acceptance order (`ORDER BY ord`). */
  accepted: { id: string; status: string; outcome: string | null; joinedInto: string | null }[];
  /** Every record of the log, in log order, with the batch it was committed in. */
  records: { seq: number; record: ConversationRecord }[];
}

/** SQL that reads a `DurableConversation` (both hosts share the schema). */
export const LEDGER_SQL = 'SELECT id, status, outcome, joined_into FROM flue_submissions WHERE stream = ? ORDER BY ord';
export const LOG_SQL = `SELECT seq, records FROM ${LOG_ROWS} WHERE stream = ? ORDER BY seq`;

export function durableConversation(ledger: Record<string, unknown>[], log: Record<string, unknown>[]): DurableConversation {
  return {
    accepted: ledger.map((row) => ({
      id: String(row.id),
      status: String(row.status),
      outcome: row.outcome === null ? null : String(row.outcome),
      joinedInto: row.joined_into === null ? null : String(row.joined_into),
    })),
    records: log.flatMap((row) => unpackRecords(String(row.records), false).records.map((record) => ({ seq: Number(row.seq), record }))),
  };
}

type Settled = Extract<ConversationRecord, { type: 'submission_settled' }>;
type UserInput = Extract<ConversationRecord, { type: 'user_message' }>;

/**
 * Checks, for deliveries sent as user messages with `bodies[i]` on `receipts[i]`:
 *   - every receipt has its own submission id, all on one incarnation;
 *   - the ledger holds exactly those submissions, all settled `completed`;
 *   - the log applies each delivery's input once, in acceptance order, with its own body;
 *   - each submission has exactly one `submission_settled` record, after its input: a host answers
 *     itself; a joined delivery names its host, its input and ledger row say it joined that host,
 *     and it settles in the host's settlement batch with the host's outcome.
 * Violations are collected and compared with `[]`, so a failure lists what went wrong (and a
 * thousand passing checks cost a thousand comparisons, not a thousand `expect` calls).
 * Returns each submission's host (the submission whose response answered it; a host is its own).
 */
export function expectDeliveredOnce(
  receipts: readonly { submissionId: string; uid: string }[],
  bodies: readonly string[],
  durable: DurableConversation,
): Map<string, string> {
  const ids = receipts.map((receipt) => receipt.submissionId);
  expect(new Set(ids).size).toBe(receipts.length);
  expect(new Set(receipts.map((receipt) => receipt.uid)).size).toBe(1);

  const acceptedIds = durable.accepted.map((row) => row.id);
  expect(acceptedIds).toHaveLength(receipts.length);
  expect([...acceptedIds].sort()).toEqual([...ids].sort());
  expect(durable.accepted.filter((row) => row.status !== 'settled' || row.outcome !== 'completed')).toEqual([]);

  const inputs = durable.records.flatMap(({ record }, at) => (record.type === 'user_message' ? [{ record, at }] : []));
  expect(inputs.map(({ record }) => record.submissionId)).toEqual(acceptedIds);
  const bodyOf = new Map(receipts.map((receipt, i) => [receipt.submissionId, bodies[i]]));
  expect(inputs.filter(({ record }) => record.body !== bodyOf.get(record.submissionId)).map(({ record }) => record.submissionId)).toEqual(
    [],
  );
  const inputOf = new Map<string, { record: UserInput; at: number }>(inputs.map((input) => [input.record.submissionId, input]));

  const settlements = durable.records.flatMap(({ record, seq }, at) => (record.type === 'submission_settled' ? [{ record, seq, at }] : []));
  expect(settlements).toHaveLength(receipts.length);
  const settledOf = new Map<string, { record: Settled; seq: number; at: number }>(settlements.map((s) => [s.record.submissionId, s]));
  expect(settledOf.size).toBe(receipts.length);

  const problems: string[] = [];
  const hostOf = new Map<string, string>();
  for (const row of durable.accepted) {
    const settled = settledOf.get(row.id)!;
    const input = inputOf.get(row.id)!;
    if (settled.at < input.at) problems.push(`${row.id}: settled before its input was applied`);
    const by = settled.record.answeredBySubmissionId;
    hostOf.set(row.id, by ?? '(none)');
    if (by === row.id) {
      if (input.record.joinedInto !== undefined || row.joinedInto !== null) problems.push(`${row.id}: a host marked as joined`);
      continue;
    }
    const host = by === undefined ? undefined : settledOf.get(by);
    if (host === undefined || host.record.answeredBySubmissionId !== by) {
      problems.push(`${row.id}: answered by ${by}, which is not a host`);
      continue;
    }
    if (input.record.joinedInto !== by || row.joinedInto !== by)
      problems.push(`${row.id}: answered by ${by} but joined ${input.record.joinedInto}/${row.joinedInto}`);
    if (host.seq !== settled.seq) problems.push(`${row.id}: settled in batch ${settled.seq}, its host in ${host.seq}`);
    if (host.record.outcome !== settled.record.outcome)
      problems.push(`${row.id}: ${settled.record.outcome}, its host ${host.record.outcome}`);
  }
  expect(problems).toEqual([]);
  return hostOf;
}
