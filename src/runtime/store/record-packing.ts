/**
 * A batch's records as stored text. A successful tool outcome's model-facing `content` is most
 * often `JSON.stringify(output)`; stored as is, a large output would be written twice, the second
 * copy escaped once more. Such an outcome is stored without `content`, and reading derives the
 * text again. Only outcomes whose text really is that JSON are packed (prose tools keep theirs),
 * and rows written before packing existed read unchanged: every stored outcome either has its
 * `content` or has an `output` to derive it from.
 *
 * `derivedBytes` is the UTF-8 size of the derived text, so that sizes the engine budgets with
 * (the conversation's log bytes, the bytes of one read answer) still count what the records
 * weigh in memory and on the wire, not only what the row holds.
 */
import { utf8Size } from '../common/limits.ts';
import type { ConversationRecord, ToolOutcome } from './records.ts';

/** Below this many characters, checking the text costs more than storing it twice. */
export const PACK_MIN_CHARS = 16 * 1024;

type StoredOutcome = Omit<ToolOutcome, 'content'> & { content?: string };

export function packRecords(records: readonly ConversationRecord[]): { text: string; derivedBytes: number } {
  let derivedBytes = 0;
  const stored = records.map((record) => {
    if (record.type !== 'tool_results' || !record.outcomes.some(mayPack)) return record;
    const outcomes = record.outcomes.map((outcome): StoredOutcome => {
      if (!mayPack(outcome) || outcome.content !== JSON.stringify(outcome.output)) return outcome;
      derivedBytes += utf8Size(outcome.content);
      const { content: _derived, ...rest } = outcome;
      return rest;
    });
    return { ...record, outcomes };
  });
  return { text: JSON.stringify(stored), derivedBytes };
}

/** The stored text back as records; `derivedBytes` is measured only when `sized`. */
export function unpackRecords(text: string, sized: boolean): { records: ConversationRecord[]; derivedBytes: number } {
  const records = JSON.parse(text) as ConversationRecord[];
  let derivedBytes = 0;
  for (const record of records) {
    if (record.type !== 'tool_results') continue;
    const outcomes = record.outcomes as StoredOutcome[];
    outcomes.forEach((outcome, i) => {
      if (outcome.content !== undefined) return;
      const content = JSON.stringify(outcome.output);
      if (sized) derivedBytes += utf8Size(content);
      outcomes[i] = withContent(outcome, content);
    });
  }
  return { records, derivedBytes };
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

function mayPack(outcome: ToolOutcome): boolean {
  return !outcome.isError && outcome.output !== undefined && outcome.content.length >= PACK_MIN_CHARS;
}
