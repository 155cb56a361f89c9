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

describe('compact records (format 5)', () => {
  const ts = '2026-01-01T00:00:00.000Z';
  const later = '2026-01-01T00:00:00.020Z';
  /** One turn as the engine writes it: the admission, a tool step written whole, its results, the reply step and the settlement. */
  function turn(): ConversationRecord[][] {
    const outcome = succeeded({ key: 'k', value: 'v' });
    noteContentIsOutputJson(outcome);
    const started = (stepId: string, extra: { metadata?: Record<string, unknown> } = {}): ConversationRecord => ({
      type: 'assistant_started',
      messageId: 'msg_1',
      stepId,
      submissionId: 'sub_1',
      attemptId: 'attempt_1',
      ...extra,
      ts,
    });
    const completed = (stepId: string, text: string): ConversationRecord => ({
      type: 'assistant_completed',
      stepId,
      messageId: 'msg_1',
      submissionId: 'sub_1',
      message: { role: 'assistant', content: [{ type: 'text', text }] } as never,
      ts: later,
    });
    return [
      [
        {
          type: 'user_message',
          messageId: 'msg_in_sub_1',
          submissionId: 'sub_1',
          deliveryOrigin: 'app',
          body: 'hi',
          ts,
          admission: { acceptedAt: ts, attemptId: 'attempt_1', startedAt: 1, maxAttempts: 10, timeoutMs: 60_000 },
        },
      ],
      [started('step_1'), completed('step_1', '')],
      [{ type: 'tool_results', stepId: 'step_1', messageId: 'msg_1', submissionId: 'sub_1', outcomes: [outcome], ts }],
      [
        started('step_2', { metadata: { tag: 'x' } }),
        completed('step_2', 'the reply'),
        { type: 'submission_settled', submissionId: 'sub_1', outcome: 'completed', answeredBySubmissionId: 'sub_1', ts: later },
      ],
    ];
  }

  it('leaves out what reading derives, and reads back the same records key for key', () => {
    for (const records of turn()) {
      const stored = JSON.stringify(packRecordValues(records, undefined, true).stored);
      const read = unpackRecords(stored, false).records;
      expect(JSON.stringify(read)).toBe(JSON.stringify(records));
      expect(read).toEqual(records);
    }
    const all = turn();
    const stored = all.map((records) => JSON.stringify(packRecordValues(records, undefined, true).stored));
    const whole = all.map((records) => JSON.stringify(records));
    expect(stored.join('')).not.toContain('assistant_started');
    expect(stored.join('')).not.toContain('msg_in_');
    expect(stored.join('')).not.toContain('answeredBySubmissionId');
    // A small outcome its producer noted as its output's JSON keeps the output alone (a layout every format reads).
    expect(stored[2]).not.toContain('"content":');
    // Each row is smaller; the step rows by about an assistant_started record each.
    stored.forEach((text, i) => expect(utf8(text)).toBeLessThan(utf8(whole[i]!)));
    expect(utf8(whole[1]!) - utf8(stored[1]!)).toBeGreaterThan(80);
    // The admission row keeps the text a backward scan for admissions looks for.
    expect(stored[0]).toContain('"admission":');
  });

  it('keeps as they are the records whose fields are not the derived ones', () => {
    const [[admitted], [started, completed], , [, , settled]] = turn();
    const cases: ConversationRecord[][] = [
      // Another step's completion, a delta between, a start alone, a start after its completion.
      [started!, { ...completed!, stepId: 'step_9' } as ConversationRecord],
      [started!, { type: 'assistant_delta', stepId: 'step_1', messageId: 'msg_1', kind: 'text', block: 0, delta: 'a' }, completed!],
      [started!],
      [completed!, started!],
      [{ ...started!, submissionId: 'sub_2' } as ConversationRecord, completed!],
      // An admission with another message id or accepted at another time; input that is no admission.
      [{ ...admitted!, messageId: 'msg_other' } as ConversationRecord],
      [{ ...admitted!, admission: { ...(admitted as { admission: object }).admission, acceptedAt: later } } as ConversationRecord],
      [{ type: 'user_message', messageId: 'msg_in_sub_1', submissionId: 'sub_1', body: 'joined', ts }],
      // A settlement answered by another submission, or by none.
      [{ ...settled!, answeredBySubmissionId: 'sub_0' } as ConversationRecord],
      [{ type: 'submission_settled', submissionId: 'sub_1', outcome: 'aborted', ts }],
    ];
    for (const records of cases) {
      const stored = packRecordValues(records, undefined, true).stored;
      expect(JSON.stringify(unpackRecords(JSON.stringify(stored), false).records)).toBe(JSON.stringify(records));
    }
    expect(JSON.stringify(packRecordValues(cases[0]!, undefined, true).stored)).toContain('assistant_started');
    expect(JSON.stringify(packRecordValues(cases[5]!, undefined, true).stored)).toContain('msg_other');
    expect(JSON.stringify(packRecordValues(cases[6]!, undefined, true).stored)).toContain(`"acceptedAt":"${later}"`);
    expect(JSON.stringify(packRecordValues(cases[8]!, undefined, true).stored)).toContain('"answeredBySubmissionId":"sub_0"');
  });

  it('is not done for a store of an earlier format, whose rows earlier versions read', () => {
    const [, step] = turn();
    expect(packRecordValues(step!).stored).toEqual(step);
  });

  it('through the store: a new store writes compact rows, one stamped 4 writes whole ones, both read the same records', async () => {
    const rowOf = (store: SqlStore) => {
      const driver = (store as unknown as { driver: { query(sql: string): { records: string }[] } }).driver;
      return driver.query('SELECT records FROM flue_log ORDER BY pos DESC LIMIT 1')[0]!.records;
    };
    const [, step] = turn();
    const current = await openStore();
    current.appendSized(storedConversationKey('s'), step!);
    expect(rowOf(current)).not.toContain('assistant_started');
    expect(current.readBatches(storedConversationKey('s'), -1)[0]!.records).toEqual(step);

    const adapter = sqlite();
    await adapter.migrate();
    const driver = await adapter.connect();
    driver.run(`UPDATE flue_meta SET value = '4' WHERE key = 'format_version'`);
    const earlier = new SqlStore(driver);
    earlier.createConversation({ key: storedConversationKey('s'), agent: 'A', instanceId: 's', incarnation: 'inc' });
    earlier.appendSized(storedConversationKey('s'), step!);
    expect(rowOf(earlier)).toContain('assistant_started');
    expect(earlier.readBatches(storedConversationKey('s'), -1)[0]!.records).toEqual(step);
  });
});
