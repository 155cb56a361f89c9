/**
 * How the history benchmarks grow a long conversation fast: copies of one real exchange, written
 * through the store. Shared by the Node builder (bench/node/history-build.ts) and the workerd
 * bench's Durable Object (bench/node/history-workerd-project.ts), so both hosts hold the same
 * history. No node:* imports: this also runs inside workerd.
 *
 * The conversation first gets two real exchanges through the public API: its birth and first
 * contact, then one whose batches, exactly as the runtime wrote them, are the template. Each copy
 * gets fresh ids and padded text (what the user wrote, what the tool returned, what the model
 * answered), and its settled submission row (keeping its settlement, as the runtime's writer
 * does). Every COMPACT_EVERY copies end with a `compaction`
 * record that keeps the last KEEP_EXCHANGES, as the threshold compaction of a model with a
 * 128k-token window would: so the model context stays the same size however long the history, and
 * only the history behind it grows.
 */
import type { ConversationKey } from '../src/runtime/store/conversation-key.ts';
import type { ConversationRecord } from '../src/runtime/store/records.ts';
import type { SqlStore } from '../src/runtime/store/sql-store.ts';
import { encodeSettlement } from '../src/runtime/engine/settled-submission.ts';
import { answer, question, toolValue } from './node/history-script.ts';

/** The key of the template exchange's question: every copy replaces it with its own. */
export const SEED_KEY = 'SEEDKEY';
/** The real exchanges before the copies: the first, then the template (asked with SEED_KEY). */
export const SEED_KEYS = ['first', SEED_KEY];

export const USER_CHARS = 6 * 1024;
export const TOOL_CHARS = 16 * 1024;
export const REPLY_CHARS = 3 * 1024;
/** About 440 KB of context per segment: a 128k-token window's threshold at ~4 characters a token. */
export const COMPACT_EVERY = 8;
export const KEEP_EXCHANGES = 2;
const SUMMARY_CHARS = 4 * 1024;

export interface HistoryPlan {
  /** The template's batches as JSON, every id suffixed with `@@T@@`. */
  templateJson: string;
  /** The first-contact resource snapshot, re-baselined after each compaction as the runtime does. */
  baseline: ConversationRecord;
  /** Model-visible messages one exchange adds. */
  perExchange: number;
}

/** Where the next segment starts: the copy's number and the model-visible index of its first message. */
export interface HistoryCursor {
  exchange: number;
  nextIndex: number;
}

/** Model-visible messages the batches add (the index space `compaction.firstKept` points into). */
function modelEntries(batches: readonly (readonly ConversationRecord[])[]): number {
  let count = 0;
  for (const record of batches.flat()) {
    if (record.type === 'user_message' || record.type === 'signal' || record.type === 'assistant_completed') count += 1;
    else if (record.type === 'tool_results') count += record.outcomes.length;
  }
  return count;
}

const ID_FIELDS = new Set(['messageId', 'stepId', 'submissionId', 'attemptId', 'toolCallId', 'answeredBySubmissionId', 'id', 'responseId']);

/** The plan from the conversation's first batches (at least the two seed exchanges), and the first cursor. */
export function planHistory(first: readonly (readonly ConversationRecord[])[]): { plan: HistoryPlan; cursor: HistoryCursor } {
  const settled = first.flatMap((batch, i) => (batch.some((record) => record.type === 'submission_settled') ? [i] : []));
  if (settled.length < SEED_KEYS.length) throw new Error('history: the conversation does not start with the seed exchanges');
  const seeded = first.slice(0, settled[SEED_KEYS.length - 1]! + 1);
  const template = seeded.slice(settled[SEED_KEYS.length - 2]! + 1);
  const last = template.at(-1)!;
  if (last.at(-1)?.type !== 'submission_settled') throw new Error('history: the template does not end in its settlement');
  const baseline = seeded.flat().find((record) => record.type === 'resource_snapshot' && record.baseline);
  if (baseline === undefined) throw new Error('history: the seed exchanges wrote no resource baseline');
  // Every id in the template, quoted, gets a per-copy suffix (quoted, so `call_1` never matches inside `call_10`).
  const ids = new Set<string>();
  const collect = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(collect);
    else if (value !== null && typeof value === 'object')
      for (const [field, inner] of Object.entries(value)) {
        if (ID_FIELDS.has(field) && typeof inner === 'string') ids.add(inner);
        else collect(inner);
      }
  };
  collect(template);
  let templateJson = JSON.stringify(template);
  for (const id of ids) templateJson = templateJson.replaceAll(`"${id}"`, `"${id}@@T@@"`);
  return {
    plan: { templateJson, baseline, perExchange: modelEntries(template) },
    cursor: { exchange: 0, nextIndex: modelEntries(seeded) },
  };
}

/** Deterministic filler: plain words, nothing JSON would escape, different per copy. */
const WORDS = [
  'ledger',
  'ticket',
  'order',
  'refund',
  'shipment',
  'customer',
  'invoice',
  'channel',
  'digest',
  'summary',
  'update',
  'status',
];
const filler = Array.from({ length: 12_000 }, (_, i) => `${WORDS[(i * 7) % WORDS.length]}${i % 97}`).join(' ');
function pad(exchange: number, chars: number, salt: number): string {
  const from = (exchange * 131 + salt * 977) % (filler.length - chars);
  return filler.slice(from, from + chars);
}

function copyOf(plan: HistoryPlan, exchange: number): { batches: ConversationRecord[][]; body: string; submissionId: string } {
  const key = `k${exchange}`;
  const body = question(key, pad(exchange, USER_CHARS, 1));
  const json = plan.templateJson
    .replaceAll('@@T@@', `_${exchange}`)
    .replaceAll(question(SEED_KEY), body)
    .replaceAll(toolValue(SEED_KEY), toolValue(key, pad(exchange, TOOL_CHARS, 2)))
    .replaceAll(answer(SEED_KEY), answer(key, pad(exchange, REPLY_CHARS, 3)))
    .replaceAll(SEED_KEY, key);
  const batches = JSON.parse(json) as ConversationRecord[][];
  const input = batches.flat().find((record) => record.type === 'user_message');
  if (input === undefined) throw new Error('history: the template has no user message');
  return { batches, body, submissionId: input.submissionId };
}

/** One segment (COMPACT_EVERY copies and their compaction) in one transaction; returns the next cursor. */
export function appendSegment(store: SqlStore, key: ConversationKey, plan: HistoryPlan, cursor: HistoryCursor): HistoryCursor {
  let { exchange, nextIndex } = cursor;
  store.transaction(() => {
    for (let i = 0; i < COMPACT_EVERY; i++, exchange++) {
      const { batches, body, submissionId } = copyOf(plan, exchange);
      const acceptedAt = new Date().toISOString();
      store.storeSubmission({
        id: submissionId,
        conversation: key,
        kind: 'dispatch',
        payload: { message: { kind: 'user', body } },
        acceptedAt,
      });
      // The settlement closes the exchange's last batch; a copy with a compaction writes it apart, as
      // a response settles when something follows its last step.
      const last = batches.pop()!;
      const settledAt = last.findIndex((record) => record.type === 'submission_settled');
      if (settledAt > 0) batches.push(last.slice(0, settledAt));
      const settlement = last.slice(settledAt);
      const first = store.append(key, batches[0]!);
      for (const batch of batches.slice(1)) store.append(key, batch);
      nextIndex += plan.perExchange;
      // The threshold compaction lands after the exchange's last step, before its settlement.
      if (i === COMPACT_EVERY - 1) {
        const compaction: ConversationRecord = {
          type: 'compaction',
          summary: `Summary of the conversation up to ${question(`k${exchange}`)}: ${pad(exchange, SUMMARY_CHARS, 4)}`,
          firstKept: nextIndex - KEEP_EXCHANGES * plan.perExchange,
          tokensBefore: Math.round((COMPACT_EVERY * (USER_CHARS + 2 * TOOL_CHARS + 2 * REPLY_CHARS)) / 4),
          submissionId,
          modelCalls: 1,
          ts: acceptedAt,
        };
        store.append(key, [compaction, plan.baseline]);
      }
      const seq = store.append(key, settlement);
      const record = settlement[0]!;
      if (record.type !== 'submission_settled' || record.usage === undefined)
        throw new Error('history: the template settles without its ledger entry');
      // The row keeps the settlement as the writer stores it; the reply is read from the exchange's batches.
      const stored = {
        seq,
        index: 0,
        outcome: record.outcome,
        answeredBySubmissionId: submissionId,
        usage: record.usage,
        reply: { of: submissionId, after: first },
      };
      store.markSettled([{ id: submissionId, settlement: encodeSettlement(stored) }], 'completed', null, Date.now());
    }
  });
  return { exchange, nextIndex };
}
