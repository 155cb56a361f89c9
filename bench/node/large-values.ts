/**
 * Large values: a 20 MB message and a 20 MB tool output written through the store's spill (strings
 * over 1 MiB go to `flue_spill` chunks in the row's transaction) and read back by a fresh store
 * on the same file (reassembly), against writing the same value's bytes in 1 MiB chunks to the same
 * SQLite file and reading them back with no framework.
 *
 *   npm run bench -- large
 *
 * Ours writes what the runtime writes for each (see bench/README.md): for a message, the
 * submission's payload at admission and the `user_message` record when the input is committed;
 * for a tool output, the `tool_results` batch, whose outcome holds the model-facing `content` (the
 * output's JSON text, kept apart as raw UTF-8) and the `output` string (parsed back from it when
 * first read). Read back: what a woken conversation reads, the batches, and for the message the
 * submission too; for the tool output its model text, with the `output` a transcript would show
 * timed apart. Every read is checked against the value.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { sqlite } from '@flue/runtime/node';
import type { ConversationRecord } from '../../src/runtime/store/records.ts';
import { SPILL_BYTES, SqlStore } from '../../src/runtime/store/sql-store.ts';
import { noteContentIsOutputJson } from '../../src/runtime/store/record-packing.ts';
import { encodeInChunks } from '../../src/runtime/store/utf8-chunks.ts';
import { type BenchRow, median, saveRows } from '../results.ts';
import { conversationKey } from '../../src/runtime/store/conversation-key.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const SIZE = 20 * 1000 * 1000;
const decoder = new TextDecoder();

/** 20 MB of text, mostly ASCII with a two-byte character every 100, so UTF-8 sizing is real work. */
function largeText(seed: number): string {
  const line = `${seed} lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt é\n`;
  return line.repeat(Math.ceil(SIZE / line.length)).slice(0, SIZE);
}

const dir = mkdtempSync(path.join(tmpdir(), 'flue-bench-large-'));
const file = path.join(dir, 'bench.db');

/** The store the runtime would use on this file, freshly opened (so reads come from SQLite). */
async function openStore(): Promise<{ store: SqlStore; close: () => void }> {
  const adapter = sqlite(file);
  await adapter.migrate();
  return { store: new SqlStore(await adapter.connect()), close: () => adapter.close() };
}

/** The baseline's connection: the same file, the same pragmas as the runtime's adapter. */
function openRaw(): DatabaseSync {
  const db = new DatabaseSync(file);
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = NORMAL');
  db.exec('CREATE TABLE IF NOT EXISTS raw_chunks (key TEXT NOT NULL, idx INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (key, idx))');
  return db;
}

interface Timing {
  write: number;
  read: number;
  /** For the tool output: making `output` from the text read, when a reader first asks for it. */
  output?: number;
}

function time<T>(work: () => T): [T, number] {
  const t0 = performance.now();
  const value = work();
  return [value, performance.now() - t0];
}

async function oursMessage(run: number, value: string): Promise<Timing> {
  const stream = conversationKey('Agent', `large-m${run}`);
  const id = `sub_large_m${run}`;
  const ts = new Date().toISOString();
  const writer = await openStore();
  const [, write] = time(() => {
    writer.store.transaction(() => {
      writer.store.createConversation({ key: stream, agent: 'Agent', instanceId: `large-m${run}`, incarnation: 'inc_bench' });
      writer.store.storeSubmission({
        id,
        conversation: stream,
        kind: 'dispatch',
        payload: { message: { kind: 'user', body: value } },
        acceptedAt: ts,
      });
    });
    const record: ConversationRecord = { type: 'user_message', messageId: `msg_${run}`, submissionId: id, body: value, ts };
    writer.store.transaction(() => writer.store.append(stream, [record]));
  });
  writer.close();
  const reader = await openStore();
  const [, read] = time(() => {
    const submission = reader.store.getSubmission(id)!;
    const record = reader.store.readBatches(stream, -1)[0]!.records[0] as { body: string };
    const payload = submission.payload.message as { body: string };
    if (record.body !== value || payload.body !== value) throw new Error('ours: the message did not read back');
  });
  reader.close();
  return { write, read };
}

async function oursToolOutput(run: number, value: string): Promise<Timing> {
  const stream = conversationKey('Agent', `large-t${run}`);
  const ts = new Date().toISOString();
  const writer = await openStore();
  // The outcome as the runtime builds it (tool-runner.ts runToolCall): content is the output's JSON,
  // noted as such by its producer.
  const outcome = {
    toolCallId: 'call_1',
    toolName: 'lookup',
    isError: false,
    content: JSON.stringify(value),
    output: value,
    durationMs: 1,
  };
  noteContentIsOutputJson(outcome);
  const [, write] = time(() => {
    writer.store.transaction(() => {
      writer.store.createConversation({ key: stream, agent: 'Agent', instanceId: `large-t${run}`, incarnation: 'inc_bench' });
      writer.store.append(stream, [
        { type: 'tool_results', stepId: 'step_1', messageId: 'msg_1', submissionId: 'sub_1', outcomes: [outcome], ts },
      ]);
    });
  });
  writer.close();
  const reader = await openStore();
  // What a woken conversation reads: the batches, whose outcome's model text (`content`) goes into
  // the model's context. `output` is made from it when first read (record-packing.ts): timed apart,
  // as what a reader that shows the output (a transcript, a stream) pays on top.
  const [got, read] = time(() => {
    const record = reader.store.readBatches(stream, -1)[0]!.records[0] as { outcomes: { output: string; content: string }[] };
    const outcome0 = record.outcomes[0]!;
    if (outcome0.content !== outcome.content) throw new Error('ours: the tool output did not read back');
    return outcome0;
  });
  const [, output] = time(() => {
    if (got.output !== value) throw new Error('ours: the tool output did not read back');
  });
  reader.close();
  return { write, read, output };
}

/** No framework: the value's UTF-8 bytes in SPILL_BYTES chunks, one transaction; read back, joined, decoded. */
function raw(key: string, value: string): Timing {
  const writer = openRaw();
  const [, write] = time(() => {
    // Encoded a chunk at a time, as the store writes its chunks: the least work that writes these bytes.
    const insert = writer.prepare('INSERT INTO raw_chunks (key, idx, data) VALUES (?, ?, ?)');
    writer.exec('BEGIN');
    encodeInChunks(value, SPILL_BYTES, (chunk, idx) => insert.run(key, idx, chunk));
    writer.exec('COMMIT');
  });
  writer.close();
  const reader = openRaw();
  const [, read] = time(() => {
    const parts = reader
      .prepare('SELECT data FROM raw_chunks WHERE key = ? ORDER BY idx')
      .all(key)
      .map((row) => row.data as Uint8Array);
    const bytes = new Uint8Array(parts.reduce((total, part) => total + part.byteLength, 0));
    let offset = 0;
    for (const part of parts) {
      bytes.set(part, offset);
      offset += part.byteLength;
    }
    if (decoder.decode(bytes) !== value) throw new Error('raw: the value did not read back');
  });
  reader.close();
  return { write, read };
}

const samples: Record<string, Timing[]> = { oursMessage: [], oursTool: [], rawMessage: [], rawTool: [] };
try {
  // One discarded round: JIT, the file's first pages, the schema.
  for (let run = -1; run < RUNS; run++) {
    const value = largeText(run);
    const round: Record<string, Timing> = {};
    const ours = async () => {
      round.oursMessage = await oursMessage(run, value);
      round.oursTool = await oursToolOutput(run, value);
    };
    const bare = () => {
      round.rawMessage = raw(`m${run}`, value);
      round.rawTool = raw(`t${run}`, value);
    };
    // Alternate which side goes first, so neither always meets a colder cache.
    if (run % 2 === 0) {
      await ours();
      bare();
    } else {
      bare();
      await ours();
    }
    if (run >= 0) for (const [name, timing] of Object.entries(round)) samples[name]!.push(timing);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const total = (timing: Timing) => timing.write + timing.read;
const med = (name: string, pick: (timing: Timing) => number) => median(samples[name]!.map(pick));
const ms = (value: number) => `${value.toFixed(0)} ms`;
const rows: BenchRow[] = [];
for (const [label, ours, theirs] of [
  ['20 MB message, admitted and committed, then read back', 'oursMessage', 'rawMessage'],
  ['20 MB tool output, committed, then read back', 'oursTool', 'rawTool'],
] as const) {
  const ratio = med(ours, total) / med(theirs, total);
  rows.push({
    figure: `${label} (write + read)`,
    ours: ms(med(ours, total)),
    baseline: ms(med(theirs, total)),
    ratio: `${ratio.toFixed(2)}×`,
    target: '≤ 1.3×',
    met: ratio <= 1.3,
    note: `raw 1 MiB chunks, same SQLite file; write ${ms(med(ours, (t) => t.write))} vs ${ms(med(theirs, (t) => t.write))}, read ${ms(med(ours, (t) => t.read))} vs ${ms(med(theirs, (t) => t.read))}${
      ours === 'oursTool' ? `; \`output\` made when first read: ${ms(med(ours, (t) => t.output ?? 0))} more` : ''
    }`,
  });
}
saveRows('large-values', `Node, node:sqlite file (WAL), median of ${RUNS} runs`, rows);
console.log(
  `load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
for (const [name, list] of Object.entries(samples))
  console.log(
    `${name}: ${list.map((t) => `write ${t.write.toFixed(0)} + read ${t.read.toFixed(0)}${t.output === undefined ? '' : ` (+ output ${t.output.toFixed(0)})`} ms`).join('; ')}`,
  );
for (const row of rows)
  console.log(
    `${row.figure}: ours ${row.ours}, baseline ${row.baseline}, ${row.ratio} (target ${row.target}) ${row.met ? 'met' : 'MISSED'} — ${row.note}`,
  );
