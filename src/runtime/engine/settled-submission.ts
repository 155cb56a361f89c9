/**
 * A settlement as its submission's row keeps it beside the log: what readers need of a settled
 * submission — its outcome and error, its ledger entry, where its reply lives — without reading
 * the log or holding it in memory. The writer stores it in the transaction of the settlement's
 * batch (ConversationWriter.settle), so row and log never disagree; the live fold keeps only the
 * recent ones, which is why its memory and its checkpoint do not grow with every settlement.
 *
 * Rows settled before it was stored (and the settlements a fork copied) have none: readers fold
 * the log for those (conversation-view.ts). A version that required the ledger entry in the text
 * reads a row without it as undecodable, so it too folds the log for that row.
 */
import type { SettlementError } from '../common/errors.ts';
import type { SettledUsage, SubmissionOutcome } from '../store/records.ts';
import type { SubmissionUsage } from '../common/types.ts';
import { emptyUsage } from '../model/usage.ts';

export interface StoredSettlement {
  /** The batch holding the `submission_settled` record. */
  seq: number;
  /** The record's place among that batch's settlements: the ledger's order within one batch. */
  index: number;
  outcome: SubmissionOutcome;
  error?: SettlementError;
  answeredBySubmissionId?: string;
  /** Its ledger entry. */
  usage: SettledUsage;
  /** The response whose assistant message is its reply, and the batch before that response's first record. */
  reply?: { of: string; after: number };
}

/** A ledger entry that spent nothing (every joined delivery's), as `emptyUsage()` spells its usage. */
const NOTHING_SPENT = JSON.stringify(emptyUsage());

function spentNothing(entry: SettledUsage): boolean {
  const { usage, modelCalls, toolCalls, attempts, ...more } = entry;
  return modelCalls === 0 && toolCalls === 0 && attempts === 0 && Object.keys(more).length === 0 && JSON.stringify(usage) === NOTHING_SPENT;
}

/**
 * The column's text. A ledger entry that spent nothing is left out (decoding restores it): a burst
 * settles one row per joined delivery, and the entry was almost half of each row's text.
 */
export function encodeSettlement(settlement: StoredSettlement): string {
  if (!spentNothing(settlement.usage)) return JSON.stringify(settlement);
  const { usage: _nothing, ...rest } = settlement;
  return JSON.stringify(rest);
}

/** The stored settlement, or undefined when the column holds something else (the log then decides). */
export function decodeSettlement(column: string): StoredSettlement | undefined {
  let value: unknown;
  try {
    value = JSON.parse(column);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const stored = value as Partial<StoredSettlement>;
  if (!('usage' in stored)) stored.usage = { usage: emptyUsage(), modelCalls: 0, toolCalls: 0, attempts: 0 };
  const usage = stored.usage as Partial<SettledUsage> | undefined;
  const reply = stored.reply as Partial<NonNullable<StoredSettlement['reply']>> | undefined;
  const valid =
    typeof stored.seq === 'number' &&
    typeof stored.index === 'number' &&
    typeof stored.outcome === 'string' &&
    typeof usage === 'object' &&
    usage !== null &&
    typeof usage.usage === 'object' &&
    (reply === undefined || (typeof reply.of === 'string' && typeof reply.after === 'number'));
  return valid ? (stored as StoredSettlement) : undefined;
}

/** The ledger's entries in settlement order. */
export function ledgerOrder(settlements: readonly { id: string; stored: StoredSettlement }[]): SubmissionUsage[] {
  return [...settlements]
    .sort((a, b) => a.stored.seq - b.stored.seq || a.stored.index - b.stored.index)
    .map(({ id, stored }) => ({ submissionId: id, ...stored.usage }));
}
