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
 */
import { utf8Size } from '../common/limits.ts';
import type { ConversationRecord, ToolOutcome } from './records.ts';

/** Below this many characters, checking the text costs more than storing it twice. */
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
): { stored: unknown[]; derivedBytes: number; outputFromContent: boolean } {
  let derivedBytes = 0;
  let outputFromContent = false;
  const stored = records.map((record) => {
    if (record.type !== 'tool_results' || !record.outcomes.some(mayPack)) return record;
    const outcomes = record.outcomes.map((outcome): StoredOutcome => {
      if (!mayPack(outcome)) return outcome;
      if (contentApart !== undefined && contentApart(outcome.content) && isStringJson(outcome)) {
        derivedBytes += utf8Size(outcome.output as string);
        outputFromContent = true;
        return renamed(outcome, 'output', OUTPUT_FROM_CONTENT, 'content');
      }
      if (outcome.content !== JSON.stringify(outcome.output)) return outcome;
      derivedBytes += utf8Size(outcome.content);
      const { content: _derived, ...rest } = outcome;
      return rest;
    });
    return { ...record, outcomes };
  });
  return { stored, derivedBytes, outputFromContent };
}

export function packRecords(records: readonly ConversationRecord[]): { text: string; derivedBytes: number } {
  const { stored, derivedBytes } = packRecordValues(records);
  return { text: JSON.stringify(stored), derivedBytes };
}

/** Parsed stored records back as records (modified in place); `derivedBytes` is measured only when `sized`. */
export function unpackRecordValues(parsed: unknown, sized: boolean): { records: ConversationRecord[]; derivedBytes: number } {
  const records = parsed as ConversationRecord[];
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
        outcomes[i] = renamed(outcome, OUTPUT_FROM_CONTENT, 'output', output) as StoredOutcome;
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
  const out = renamed(stored, OUTPUT_FROM_CONTENT, 'output', undefined) as ToolOutcome;
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

/** The object with one key renamed and given a new value in the same place, so key order is kept. */
function renamed(object: object, from: string, to: string, value: unknown): StoredOutcome | ToolOutcome {
  const out: Record<string, unknown> = {};
  for (const [key, entry] of Object.entries(object)) {
    if (key === from) out[to] = value;
    else out[key] = entry;
  }
  return out as unknown as ToolOutcome;
}

/**
 * Whether `content` is the JSON of a string `output`: noted by its producer (the same two strings,
 * compared by identity first), or else tested by parsing it back, which is exact and costs less
 * than escaping the output again.
 */
function isStringJson(outcome: ToolOutcome): boolean {
  const { content: text, output } = outcome;
  if (typeof output !== 'string' || text.length < output.length + 2 || text.charCodeAt(0) !== 34) return false;
  const made = madeAsJson.get(outcome);
  if (made !== undefined && made.content === text && made.output === output) return true;
  try {
    return JSON.parse(text) === output;
  } catch {
    return false;
  }
}

function mayPack(outcome: ToolOutcome): boolean {
  return !outcome.isError && outcome.output !== undefined && outcome.content.length >= PACK_MIN_CHARS;
}
