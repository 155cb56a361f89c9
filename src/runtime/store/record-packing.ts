/**
 * A batch's records as stored. A successful tool outcome's model-facing `content` is most often
 * `JSON.stringify(output)`; stored as is, a large output would be written twice, the second copy
 * escaped once more. Such an outcome is stored without one of the two, and reading derives it again:
 *
 * - without `content` (derived as `JSON.stringify(output)`), the layout every store may hold;
 * - without a string `output` (derived as `JSON.parse(content)`, marked `"~output": "content"` where
 *   `output` was), only when the store keeps `content` apart as raw UTF-8 (value-parts.ts): parsing
 *   the text back costs a fraction of escaping it, and a version before that layout cannot read
 *   such a row at all, so it never sees an outcome without its output.
 *
 * Only outcomes whose text really is that JSON are packed (prose tools keep theirs), and rows
 * written before packing existed read unchanged: every stored outcome either has its `content`, or
 * has an `output` to derive it from, or is marked.
 *
 * `derivedBytes` is the UTF-8 size of the derived text, so that sizes the engine budgets with
 * (the conversation's log bytes, the bytes of one read answer) still count what the records
 * weigh in memory and on the wire, not only what the row holds.
 *
 * From format 5 (schema.ts) a store also keeps the records of every turn shorter, writing what
 * reading can derive exactly once (`compact`), each under a marker key no record has:
 *
 * | marker | stands for |
 * | --- | --- |
 * | `~s` on `assistant_completed` | the `assistant_started` right before it in the batch, same step, message and submission (a step written whole): `[attemptId, ts]`, or `[attemptId, ts, metadata]` |
 * | `~m` on an admitted `user_message` or `signal`, in `messageId`'s place | `messageId` is `msg_in_` + its submission id |
 * | `~t` on an admission, in `acceptedAt`'s place | `acceptedAt` is the record's `ts` |
 * | `~r` on `submission_settled`, in `answeredBySubmissionId`'s place | it answered itself |
 *
 * A turn's rows are then about a ninth smaller (two `assistant_started` records of ~240 bytes, ids
 * the record already holds). A Durable Object bills the pages its rows fill; rows appended in key
 * order fill pages greedily, so fewer bytes a turn is fewer pages a turn. These derived fields are
 * not counted in `derivedBytes`: each is a few dozen bytes. A version before format 5 would read a
 * step with no start, so it refuses such a store (its stamp).
 */
import { utf8Size } from '../common/limits.ts';
import type { ConversationRecord, LogAdmission, RecordOf, ToolOutcome } from './records.ts';

/** Below this many characters, checking the text costs more than storing it twice (an outcome noted as made so needs no check). */
export const PACK_MIN_CHARS = 16 * 1024;

/**
 * Outcomes whose producer made `content` as `JSON.stringify(output)`, with the two values it made:
 * packing one whose values are still those skips checking that its text is the output's JSON (a
 * full parse of a text that may be 24 MiB). Held weakly, so it keeps nothing alive.
 */
const madeAsJson = new WeakMap<ToolOutcome, { content: string; output: unknown }>();

/** Notes that `outcome.content` was made as `JSON.stringify(outcome.output)` (the tool runner's success outcome). */
export function noteContentIsOutputJson(outcome: ToolOutcome): void {
  madeAsJson.set(outcome, { content: outcome.content, output: outcome.output });
}

/** Carries the note to a copy that kept both values (the dispatcher's outcome). */
export function carryContentNote(from: ToolOutcome, to: ToolOutcome): void {
  const made = madeAsJson.get(from);
  if (made !== undefined && made.content === to.content && made.output === to.output) madeAsJson.set(to, made);
}

/** Stands where a string `output` was, in an outcome stored with only its `content`. */
const OUTPUT_FROM_CONTENT = '~output';

type StoredOutcome = Omit<ToolOutcome, 'content'> & { content?: string; [OUTPUT_FROM_CONTENT]?: 'content' };

/**
 * The records as they are stored, before JSON. `contentApart` says which large texts the store
 * keeps apart: an outcome whose `content` it accepts and whose `output` is that text's JSON string
 * keeps `content` and drops `output` (`outputFromContent` then says so: such records are only for
 * a row that keeps that text apart); any other packable outcome drops `content`.
 */
export function packRecordValues(
  records: readonly ConversationRecord[],
  contentApart?: (text: string) => boolean,
  compact = false,
): { stored: unknown[]; derivedBytes: number; outputFromContent: boolean } {
  let derivedBytes = 0;
  let outputFromContent = false;
  const stored = (compact ? compactRecords(records) : records).map((record) => {
    if (record.type !== 'tool_results' || !record.outcomes.some(mayPack)) return record;
    const outcomes = record.outcomes.map((outcome): StoredOutcome => {
      if (!mayPack(outcome)) return outcome;
      if (contentApart !== undefined && contentApart(outcome.content) && isStringJson(outcome)) {
        derivedBytes += utf8Size(outcome.output as string);
        outputFromContent = true;
        return renamed<StoredOutcome>(outcome, 'output', OUTPUT_FROM_CONTENT, 'content');
      }
      if (!madeAsOutputJson(outcome) && outcome.content !== JSON.stringify(outcome.output)) return outcome;
      derivedBytes += utf8Size(outcome.content);
      const { content: _derived, ...rest } = outcome;
      return rest;
    });
    return { ...record, outcomes };
  });
  return { stored, derivedBytes, outputFromContent };
}

export function packRecords(records: readonly ConversationRecord[], compact = false): { text: string; derivedBytes: number } {
  const { stored, derivedBytes } = packRecordValues(records, undefined, compact);
  return { text: JSON.stringify(stored), derivedBytes };
}

/** Parsed stored records back as records (modified in place); `derivedBytes` is measured only when `sized`. */
export function unpackRecordValues(parsed: unknown, sized: boolean): { records: ConversationRecord[]; derivedBytes: number } {
  const records = expandRecords(parsed as StoredRecord[]);
  let derivedBytes = 0;
  for (const record of records) {
    if (record.type !== 'tool_results') continue;
    const outcomes = record.outcomes as StoredOutcome[];
    outcomes.forEach((outcome, i) => {
      if (outcome[OUTPUT_FROM_CONTENT] === 'content' && outcome.content !== undefined) {
        if (!sized) {
          outcomes[i] = withOutputOnDemand(outcome, outcome.content) as StoredOutcome;
          return;
        }
        const output = JSON.parse(outcome.content) as string;
        derivedBytes += utf8Size(output);
        outcomes[i] = renamed<StoredOutcome>(outcome, OUTPUT_FROM_CONTENT, 'output', output);
        return;
      }
      if (outcome.content !== undefined) return;
      const content = JSON.stringify(outcome.output);
      if (sized) derivedBytes += utf8Size(content);
      outcomes[i] = withContent(outcome, content);
    });
  }
  return { records, derivedBytes };
}

/** The stored text back as records; `derivedBytes` is measured only when `sized`. */
export function unpackRecords(text: string, sized: boolean): { records: ConversationRecord[]; derivedBytes: number } {
  return unpackRecordValues(JSON.parse(text), sized);
}

/** The outcome with `content` back in its place after `isError`, so it serializes as it was written. */
function withContent(outcome: StoredOutcome, content: string): ToolOutcome {
  const restored: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(outcome)) {
    restored[key] = value;
    if (key === 'isError') restored.content = content;
  }
  return restored as unknown as ToolOutcome;
}

/**
 * The outcome with `output` in the marker's place, parsed from `content` when it is first read (or
 * given a value unread). A woken conversation's model context needs only `content`, so a large
 * output costs its parse (about 100 ms for 20 MB) only to a reader that shows it: a transcript, a
 * stream, a copy. To every reader it is an enumerable property like the others (spread, JSON and
 * structured clone read it); the value is kept once made.
 */
function withOutputOnDemand(stored: StoredOutcome, content: string): ToolOutcome {
  const out = renamed<ToolOutcome>(stored, OUTPUT_FROM_CONTENT, 'output', undefined);
  let made: { value: unknown } | undefined;
  // Redefined in place: the key keeps its position.
  Object.defineProperty(out, 'output', {
    enumerable: true,
    configurable: true,
    get: () => (made ??= { value: JSON.parse(content) }).value,
    set: (value: unknown) => {
      made = { value };
    },
  });
  return out;
}

/** A record as a format-5 row may hold it: with the markers of the table above. */
type StoredRecord = ConversationRecord & { [marker in CompactMarker]?: unknown };
type CompactMarker = '~s' | '~m' | '~t' | '~r';

/** The records with what reading derives left out (the table above). */
function compactRecords(records: readonly ConversationRecord[]): StoredRecord[] {
  const out: StoredRecord[] = [];
  for (let i = 0; i < records.length; i++) {
    const record = records[i]!;
    const next = records[i + 1];
    if (record.type === 'assistant_started' && next !== undefined && startsWhole(record, next)) {
      const started = record.metadata === undefined ? [record.attemptId, record.ts] : [record.attemptId, record.ts, record.metadata];
      out.push({ ...next, '~s': started });
      i++;
      continue;
    }
    out.push(compactRecord(record));
  }
  return out;
}

/** Whether `started` is the start of the step `next` completes, written whole with it. */
function startsWhole(started: RecordOf<'assistant_started'>, next: ConversationRecord): next is RecordOf<'assistant_completed'> {
  return (
    next.type === 'assistant_completed' &&
    next.stepId === started.stepId &&
    next.messageId === started.messageId &&
    next.submissionId === started.submissionId
  );
}

function compactRecord(record: ConversationRecord): StoredRecord {
  switch (record.type) {
    case 'user_message':
    case 'signal': {
      if (record.admission === undefined || record.submissionId === undefined) return record;
      let stored: StoredRecord = record;
      if (record.admission.acceptedAt === record.ts) {
        stored = { ...stored, admission: renamed<LogAdmission>(record.admission, 'acceptedAt', '~t', 1) };
      }
      if (record.messageId === `msg_in_${record.submissionId}`) stored = renamed<StoredRecord>(stored, 'messageId', '~m', 1);
      return stored;
    }
    case 'submission_settled':
      return record.answeredBySubmissionId === record.submissionId
        ? renamed<StoredRecord>(record, 'answeredBySubmissionId', '~r', 1)
        : record;
    default:
      return record;
  }
}

/** Stored records as records: each marker back as what it stands for, in its place (parsed objects, changed in place where they can be). */
function expandRecords(stored: StoredRecord[]): ConversationRecord[] {
  let out: ConversationRecord[] | undefined;
  for (let i = 0; i < stored.length; i++) {
    const record = stored[i]!;
    const expanded = expandRecord(record);
    if (expanded === record && out === undefined) continue;
    out ??= stored.slice(0, i);
    if (Array.isArray(expanded)) out.push(...expanded);
    else out.push(expanded);
  }
  return out ?? stored;
}

function expandRecord(record: StoredRecord): ConversationRecord | ConversationRecord[] {
  switch (record.type) {
    case 'assistant_completed': {
      const started = record['~s'] as [string, string, Record<string, unknown>?] | undefined;
      if (started === undefined) return record;
      const { '~s': _, ...completed } = record;
      const [attemptId, ts, metadata] = started;
      const { messageId, stepId, submissionId } = completed;
      return [
        { type: 'assistant_started', messageId, stepId, submissionId, attemptId, ...(metadata === undefined ? {} : { metadata }), ts },
        completed as ConversationRecord,
      ];
    }
    case 'user_message':
    case 'signal': {
      if (record.admission !== undefined && '~t' in record.admission) {
        record.admission = renamed<LogAdmission>(record.admission, '~t', 'acceptedAt', record.ts);
      }
      return '~m' in record ? renamed<ConversationRecord>(record, '~m', 'messageId', `msg_in_${record.submissionId}`) : record;
    }
    case 'submission_settled':
      return '~r' in record ? renamed<ConversationRecord>(record, '~r', 'answeredBySubmissionId', record.submissionId) : record;
    default:
      return record;
  }
}

/** The object with one key renamed and given a new value in the same place, so key order is kept. */
function renamed<T>(object: object, from: string, to: string, value: unknown): T {
  const out: Record<string, unknown> = {};
  for (const [key, entry] of Object.entries(object)) {
    if (key === from) out[to] = value;
    else out[key] = entry;
  }
  return out as T;
}

/**
 * Whether `content` is the JSON of a string `output`: noted by its producer (the same two strings,
 * compared by identity first), or else tested by parsing it back, which is exact and costs less
 * than escaping the output again.
 */
function isStringJson(outcome: ToolOutcome): boolean {
  const { content: text, output } = outcome;
  if (typeof output !== 'string' || text.length < output.length + 2 || text.charCodeAt(0) !== 34) return false;
  if (madeAsOutputJson(outcome)) return true;
  try {
    return JSON.parse(text) === output;
  } catch {
    return false;
  }
}

/** Whether the outcome's producer noted its `content` as `JSON.stringify(output)`, and both values are still the ones it made. */
function madeAsOutputJson(outcome: ToolOutcome): boolean {
  const made = madeAsJson.get(outcome);
  return made !== undefined && made.content === outcome.content && made.output === outcome.output;
}

/** A successful outcome with an output whose `content` may be its JSON: a large one is checked, a noted one of any size is known. */
function mayPack(outcome: ToolOutcome): boolean {
  return !outcome.isError && outcome.output !== undefined && (outcome.content.length >= PACK_MIN_CHARS || madeAsOutputJson(outcome));
}
