/**
 * Checkpoints of a live fold: when one is due, its stored form, and whether a stored one can be
 * trusted. A checkpoint is derived data: the fold of the batches up to its `seq`, written in the
 * transaction of the batch after it, so waking a conversation reads the checkpoint and the batches
 * after it instead of the whole log. One that does not check out (missing, unreadable, another
 * version, another incarnation, past the log's head, the wrong shape) is ignored and the log is
 * folded from its start, which is always right.
 */
import * as v from 'valibot';
import { Conversation, type FoldState } from './conversation.ts';
import { MiB } from '../common/limits.ts';

/** The stored form's version; a checkpoint of any other version is ignored (the log is folded instead). */
export const CHECKPOINT_VERSION = 2;

/** Batches since the last checkpoint after which the next commit writes one. */
export const CHECKPOINT_EVERY_BATCHES = 256;
/** Log bytes since the last checkpoint after which the next commit writes one. */
export const CHECKPOINT_EVERY_BYTES = 8 * MiB;

/** What a conversation wrote since its last checkpoint. */
export interface SinceCheckpoint {
  batches: number;
  bytes: number;
  /** A compaction landed: the fold just shrank, and a wake should not fold what it dropped. */
  compacted: boolean;
  /** The stored size of the last checkpoint (0: none yet). */
  lastBytes: number;
}

export function freshSince(lastBytes: number): SinceCheckpoint {
  return { batches: 0, bytes: 0, compacted: false, lastBytes };
}

/**
 * Whether the next commit writes a checkpoint: after a compaction, or once enough was written
 * (batches or bytes) — but never before the log written since is half the last checkpoint's size,
 * so checkpoints cost at most about twice the log's own bytes however large the live context is.
 */
export function checkpointDue(since: SinceCheckpoint): boolean {
  if (since.batches === 0) return false;
  if (since.compacted) return true;
  const enough = since.batches >= CHECKPOINT_EVERY_BATCHES || since.bytes >= CHECKPOINT_EVERY_BYTES;
  return enough && since.bytes * 2 >= since.lastBytes;
}

/** What a live fold's checkpoint stores; the store writes its JSON, or keeps its large strings apart. */
export function checkpointValue(conv: Conversation, incarnation: string | undefined): { incarnation: string | null; state: unknown } {
  return { incarnation: incarnation ?? null, state: conv.state() };
}

/** The stored body of a live fold's checkpoint, as JSON text. */
export function encodeCheckpoint(conv: Conversation, incarnation: string | undefined): string {
  return JSON.stringify(checkpointValue(conv, incarnation));
}

/** A stored checkpoint as the store returns it: its JSON text, or its value when its large strings were kept apart. */
export type StoredCheckpoint = { seq: number; version: number } & ({ body: string; value?: never } | { value: unknown; body?: never });

/**
 * The fold a stored checkpoint holds, or the reason it is not trusted. `head` is the log's head
 * and `incarnation` the conversation's: a checkpoint past the head or of another incarnation
 * describes some other log.
 */
export function restoreCheckpoint(
  stored: StoredCheckpoint,
  expect: { head: number; incarnation: string | undefined },
): { conv: Conversation } | { rejected: string } {
  if (stored.version !== CHECKPOINT_VERSION) return { rejected: `version ${stored.version}, expected ${CHECKPOINT_VERSION}` };
  if (stored.seq > expect.head) return { rejected: `its batch ${stored.seq} is past the log's head ${expect.head}` };
  let body: unknown = stored.value;
  if (stored.body !== undefined) {
    try {
      body = JSON.parse(stored.body);
    } catch {
      return { rejected: 'its body is not JSON' };
    }
  }
  const parsed = v.safeParse(CheckpointBody, body);
  if (!parsed.success) return { rejected: `wrong shape at ${v.getDotPath(parsed.issues[0]) ?? 'the top'}: ${parsed.issues[0].message}` };
  if (parsed.output.incarnation !== (expect.incarnation ?? null)) return { rejected: 'it is of another incarnation' };
  const state = parsed.output.state as unknown as FoldState;
  if (state.head !== stored.seq) return { rejected: `it holds batch ${state.head}, stored as ${stored.seq}` };
  return { conv: Conversation.restore(state) };
}

// The shape checked before a checkpoint is trusted: every field the fold reads, with its type,
// and the members of its collections as far as the fold reaches into them. The collections that
// can grow with the history (child conversations, delivered attachments) are checked by plain
// loops (`every`), so a wake stays cheap with thousands of them; the rest, which follow the live
// context, by schema. Settlements are not here: their submissions' rows keep them.
type Check = (value: unknown) => boolean;
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isString: Check = (value) => typeof value === 'string';
const isNumber: Check = (value) => typeof value === 'number';
const fields = (shape: Record<string, Check>): Check => {
  const entries = Object.entries(shape);
  return (value) => {
    if (!isObject(value)) return false;
    for (const [key, check] of entries) if (!check(value[key])) return false;
    return true;
  };
};
const pair =
  (first: Check, second: Check): Check =>
  (value) =>
    Array.isArray(value) && value.length === 2 && first(value[0]) && second(value[1]);
const everyOne = (check: Check, what: string) =>
  v.custom<unknown[]>((value) => Array.isArray(value) && value.every(check), `expected a list of ${what}`);
const idList = everyOne(isString, 'ids');
const isRef = fields({ id: isString, mimeType: isString });
const isChild = fields({ conversationId: isString, stream: isString, agent: isString, parentToolCallId: isString });
const id = v.string();
const json = v.unknown();
const usage = v.looseObject({ input: v.number(), output: v.number(), cost: v.looseObject({ total: v.number() }) });
const message = v.looseObject({
  id,
  role: v.picklist(['user', 'assistant', 'system']),
  parts: v.array(v.looseObject({ type: v.string() })),
});
const modelEntry = v.looseObject({ role: v.picklist(['user', 'assistant', 'toolResult']), content: v.union([v.string(), v.array(json)]) });
const response = v.looseObject({
  steps: v.number(),
  finishCycles: v.number(),
  data: v.array(v.tuple([v.string(), v.array(json)])),
  usage,
  spent: usage,
  modelCalls: v.number(),
  toolCalls: v.array(v.looseObject({ tool: v.string(), isError: v.boolean() })),
  progress: v.strictObject({ lines: v.number(), chars: v.number() }),
});
const CheckpointBody = v.strictObject({
  incarnation: v.nullable(v.string()),
  state: v.strictObject({
    head: v.number(),
    conversationId: v.string(),
    uid: v.optional(v.string()),
    initialData: v.optional(json),
    messages: v.array(message),
    applied: idList,
    startRuns: idList,
    tail: v.looseObject({ terminated: v.boolean(), unread: v.boolean() }),
    ledgerTotal: usage,
    settledCount: v.pipe(v.number(), v.integer(), v.minValue(0)),
    hostActivity: v.optional(v.looseObject({ rowsWritten: v.number(), alarmsSet: v.number(), rpcsServed: v.number() })),
    lastDelivery: v.optional(v.strictObject({ origin: v.string(), message: v.looseObject({ kind: v.string() }) })),
    compactedSinceLastStep: v.boolean(),
    resourceSnapshot: v.optional(v.looseObject({})),
    resourceBaseline: v.optional(v.looseObject({})),
    children: everyOne(isChild, 'child conversations'),
    childrenBySubmission: everyOne(
      pair(isString, (refs) => Array.isArray(refs) && refs.every(isChild)),
      'child conversations',
    ),
    currentSubmission: v.optional(id),
    attachments: everyOne(isRef, 'attachments'),
    documents: everyOne(isRef, 'documents'),
    responses: v.array(v.tuple([id, response])),
    modelBase: v.pipe(v.number(), v.integer(), v.minValue(0)),
    modelEntries: v.array(modelEntry),
    compaction: v.optional(v.strictObject({ summary: v.string(), firstKept: v.number() })),
    lastAssistantEntry: v.optional(modelEntry),
    responseStarts: everyOne(pair(isString, isNumber), 'response starts'),
    lastAssistantSource: v.optional(v.strictObject({ of: id, after: v.number() })),
  }),
});
