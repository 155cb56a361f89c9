import { describe, expect, it, vi } from 'vitest';
import { sqlite } from '../../node/sqlite.ts';
import type { ConversationRecord, ToolOutcome } from './records.ts';
import {
  PACK_MIN_CHARS,
  carryContentNote,
  noteContentIsOutputJson,
  packRecordValues,
  packRecords,
  unpackRecordValues,
  unpackRecords,
} from './record-packing.ts';
import { SqlStore } from './sql-store.ts';
import { storedConversationKey } from './conversation-key.ts';

const encoder = new TextEncoder();
const utf8 = (text: string) => encoder.encode(text).byteLength;

function results(...outcomes: ToolOutcome[]): ConversationRecord[] {
  return [{ type: 'tool_results', stepId: 'step_1', messageId: 'msg_1', submissionId: 'sub_1', outcomes, ts: '2026-01-01T00:00:00.000Z' }];
}

/** A large JSON output: quotes, newlines, non-ASCII and a lone surrogate, so escaping is real. */
function largeOutput(): unknown {
  const line = 'say "hé" \\ \n\t 😀 \ud800 end';
  return { rows: Array.from({ length: Math.ceil((PACK_MIN_CHARS * 2) / line.length) }, (_, i) => ({ i, line, n: i / 3, none: null })) };
}

function succeeded(output: unknown, content = JSON.stringify(output)): ToolOutcome {
  return { toolCallId: 'call_1', toolName: 'lookup', isError: false, content, output, durationMs: 3 };
}

/** A fresh store holding conversation `s`, its log empty. */
async function openStore(): Promise<SqlStore> {
  const adapter = sqlite();
  await adapter.migrate();
  const store = new SqlStore(await adapter.connect());
  store.createConversation({ key: storedConversationKey('s'), agent: 'A', instanceId: 's', incarnation: 'inc' });
  return store;
}

describe('record packing', () => {
  it('stores a large outcome whose text is the JSON of its output once, and reads back the same records', () => {
    const records = results(succeeded(largeOutput()));
    const packed = packRecords(records);
    const content = (records[0] as Extract<ConversationRecord, { type: 'tool_results' }>).outcomes[0]!.content;
    expect(packed.text.includes(JSON.stringify(content))).toBe(false);
    expect(utf8(packed.text)).toBeLessThan(utf8(JSON.stringify(records)) * 0.6);
    expect(packed.derivedBytes).toBe(utf8(content));
    const unpacked = unpackRecords(packed.text, true);
    expect(unpacked.records).toEqual(records);
    expect(JSON.stringify(unpacked.records) === JSON.stringify(records)).toBe(true); // same key order, byte for byte
    expect(unpacked.derivedBytes).toBe(packed.derivedBytes);
  });

  it('keeps text that is not the JSON of the output, errors, void results and small outcomes as they are', () => {
    const big = largeOutput();
    const prose = succeeded('x'.repeat(PACK_MIN_CHARS * 2), 'x'.repeat(PACK_MIN_CHARS * 2));
    const reworded = succeeded(big, `${JSON.stringify(big)} `);
    const failed: ToolOutcome = { toolCallId: 'call_2', toolName: 'lookup', isError: true, content: 'e'.repeat(PACK_MIN_CHARS * 2) };
    const small = succeeded({ ok: true });
    const records = results(prose, reworded, failed, small);
    const packed = packRecords(records);
    expect(packed.text).toBe(JSON.stringify(records));
    expect(packed.derivedBytes).toBe(0);
    expect(unpackRecords(packed.text, true).records).toEqual(records);
  });

  it('reads rows written before packing unchanged', () => {
    const records = results(succeeded(largeOutput()));
    const legacy = JSON.stringify(records);
    const read = unpackRecords(legacy, true);
    expect(read.records).toEqual(records);
    expect(read.derivedBytes).toBe(0);
  });

  it('through the store: the row holds the value once, sizes count the derived text, reads are exact', async () => {
    const store = await openStore();
    const records = results(succeeded(largeOutput()), succeeded('plain', 'plain'));
    const { bytes } = store.appendSized(storedConversationKey('s'), records, -1);
    expect(bytes).toBe(utf8(packRecords(records).text) + packRecords(records).derivedBytes);
    const [read] = store.readBatchesSized(storedConversationKey('s'), -1);
    expect(read!.batch.records).toEqual(records);
    expect(read!.bytes).toBe(bytes);
    expect(store.readBatches(storedConversationKey('s'), -1)[0]!.records).toEqual(records);
  });

  it("keeps a string output's text and drops the output only where the store keeps that text apart", () => {
    const output = 'line "one"\n\tzwei é 😀 \\ '.repeat(PACK_MIN_CHARS);
    const records = results(succeeded(output), succeeded({ rows: [output] }), succeeded(output, `${JSON.stringify(output)}!`));
    const apart = (text: string) => text.length > PACK_MIN_CHARS;
    const packed = packRecordValues(records, apart);
    expect(packed.outputFromContent).toBe(true);
    const [stringOutput, objectOutput, reworded] = (packed.stored[0] as { outcomes: Record<string, unknown>[] }).outcomes;
    expect(Object.keys(stringOutput!)).toEqual(['toolCallId', 'toolName', 'isError', 'content', '~output', 'durationMs']);
    expect(stringOutput!.content).toBe(JSON.stringify(output));
    expect(objectOutput!.content).toBeUndefined(); // not a string: its text is derived, as before
    expect(reworded).toEqual(succeeded(output, `${JSON.stringify(output)}!`));
    expect(packed.derivedBytes).toBe(utf8(output) + utf8(JSON.stringify({ rows: [output] })));
    const read = unpackRecordValues(JSON.parse(JSON.stringify(packed.stored)), true);
    expect(JSON.stringify(read.records)).toBe(JSON.stringify(records));
    expect(read.derivedBytes).toBe(packed.derivedBytes);
    // Without a store keeping texts apart, no outcome loses its output.
    expect(packRecordValues(records).outputFromContent).toBe(false);
    expect(JSON.stringify(packRecordValues(records).stored)).not.toContain('~output');
  });

  it('makes a string output kept as its text when it is first read, so a read that needs only the text never parses it', () => {
    const output = 'line "one"\n\tzwei é 😀 \\ '.repeat(PACK_MIN_CHARS);
    const records = results(succeeded(output));
    const stored = JSON.stringify(packRecordValues(records, () => true).stored);
    const readBack = (sized: boolean) =>
      (unpackRecordValues(JSON.parse(stored), sized).records[0] as { outcomes: ToolOutcome[] }).outcomes[0]!;
    const parse = vi.spyOn(JSON, 'parse');
    try {
      const outcome = readBack(false);
      expect(outcome.content).toBe(JSON.stringify(output));
      expect(Object.keys(outcome)).toEqual(['toolCallId', 'toolName', 'isError', 'content', 'output', 'durationMs']);
      expect(parse).toHaveBeenCalledTimes(1); // the row's
      // Every way of reading it sees the output: a read, a copy, JSON, a structured clone.
      expect(outcome.output).toBe(output);
      expect(outcome.output).toBe(output);
      expect(parse).toHaveBeenCalledTimes(2);
      expect({ ...outcome }).toEqual(succeeded(output));
      expect(structuredClone(outcome)).toEqual(succeeded(output));
      expect(JSON.stringify(outcome)).toBe(JSON.stringify(succeeded(output)));
      // A fresh read, written over before it is ever read: the new value stands, in its place.
      const other = readBack(false);
      other.output = 'replaced';
      expect(other.output).toBe('replaced');
      expect(Object.keys(other)).toEqual(['toolCallId', 'toolName', 'isError', 'content', 'output', 'durationMs']);
      // Frozen before it is read (a caller that freezes what it keeps): still read.
      expect(Object.freeze(readBack(false)).output).toBe(output);
      // A sized read measures the output, so it makes it at once.
      parse.mockClear();
      expect(readBack(true).output).toBe(output);
      expect(parse).toHaveBeenCalledTimes(2);
    } finally {
      parse.mockRestore();
    }
  });

  it("trusts its producer's note that the text is the output's JSON only while both values are the noted ones", () => {
    const output = 'line "one"\n'.repeat(PACK_MIN_CHARS);
    const apart = (text: string) => text.length > PACK_MIN_CHARS;
    const parse = vi.spyOn(JSON, 'parse');
    const parsedBig = () => parse.mock.calls.filter(([text]) => typeof text === 'string' && text.length > PACK_MIN_CHARS).length;
    try {
      const noted = succeeded(output);
      noteContentIsOutputJson(noted);
      const copied = { ...noted };
      carryContentNote(noted, copied);
      expect(packRecordValues(results(copied), apart).outputFromContent).toBe(true);
      expect(parsedBig()).toBe(0);
      // A copy whose text changed carries no note: it is tested, and kept whole when the test fails.
      const changed = { ...noted, content: `${noted.content}!` };
      carryContentNote(noted, changed);
      expect(packRecordValues(results(changed), apart).outputFromContent).toBe(false);
      expect(parsedBig()).toBe(1);
      // A noted outcome whose text was replaced afterwards is tested too.
      noted.content = JSON.stringify(`${output}?`);
      expect(packRecordValues(results(noted), apart).outputFromContent).toBe(false);
      expect(parsedBig()).toBe(2);
    } finally {
      parse.mockRestore();
    }
  });
});
