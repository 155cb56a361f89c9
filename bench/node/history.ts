/**
 * History: the same agent woken in a fresh process from an `sqlite()` file holding 1 MB, 100 MB
 * and 1 GB of one conversation's history, sent one message and read until settled, all through the
 * public API. A long-lived conversation must cost the same to wake and to hold whatever its length:
 * admission → first model request and the RSS the wake and turn add, for 100 MB and 1 GB as a
 * ratio over the 1 MB figure (target ≤ 1.2×).
 *
 *   npm run bench -- history
 *   BENCH_RUNS=7 npm run bench -- history
 *
 * The history files are built once (history-build.ts: real exchanges through the public API,
 * copies of them through the store, bench/history-segments.ts) and kept in
 * bench/.results/history/<stamp>/, where the stamp hashes the store's schema, the builder's
 * sources and the engine's, so a repeat run skips the build and a changed schema, builder or
 * engine builds afresh. Each measurement runs in its own process
 * (history-child.ts) on a fresh copy of the file; the scripted model server runs here, so its
 * memory is not the measured process's. A run that is refused or runs out of memory is a figure
 * too: the row says so instead of failing the whole `npm run bench`.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  rmSync,
  statfsSync,
  writeFileSync,
} from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type RecordedRequest, startScriptedModelServer } from '@flue/runtime/testing';
import { sqlite } from '@flue/runtime/node';
import { FLUE_FORMAT_VERSION } from '../../src/runtime/store/sql-store.ts';
import { type BenchRow, median, resultsDir, saveRows } from '../results.ts';
import type { WakeResult } from './history-child.ts';
import { question, scriptedReply } from './history-script.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
/** A size whose first run takes longer than this is measured once (the 1 GB wake of a runtime that folds everything). */
const SLOW_RUN_MS = 20_000;
const CHILD_TIMEOUT_MS = 180_000;
/** The measured process's heap cap: well above what any figure here should need, below what would starve a shared machine. */
const HEAP_CAP_MB = 3072;
const MiB = 1024 * 1024;

interface Size {
  label: string;
  bytes: number;
}
const SIZES: Size[] = [
  { label: '1 MB', bytes: 1e6 },
  { label: '100 MB', bytes: 1e8 },
  { label: '1 GB', bytes: 1e9 },
];

const here = fileURLToPath(new URL('.', import.meta.url));
const node = [process.execPath, '--disable-warning=ExperimentalWarning'];

/**
 * What a built file depends on: the store's format and schema, how the builder writes, and the
 * engine and store code that wrote its real exchanges (a runtime that refused the last one, or that
 * derives something new when it writes, such as a checkpoint, must not lend its file to another).
 */
async function formatStamp(): Promise<string> {
  const adapter = sqlite();
  await adapter.migrate();
  const schema = (await adapter.connect()).query('SELECT type, name, sql FROM sqlite_master ORDER BY name');
  await adapter.close();
  const hash = createHash('sha256').update(FLUE_FORMAT_VERSION).update(JSON.stringify(schema));
  for (const source of ['history-build.ts', 'history-agent.ts', 'history-script.ts', '../history-segments.ts'])
    hash.update(readFileSync(join(here, source)));
  for (const dir of ['../../src/runtime/engine', '../../src/runtime/store', '../../src/runtime/common']) {
    const files = readdirSync(join(here, dir)).filter(
      (name) => name.endsWith('.ts') && !name.includes('.test.') && !name.includes('.fixtures.'),
    );
    for (const name of files.sort()) hash.update(name).update(readFileSync(join(here, dir, name)));
  }
  return hash.digest('hex').slice(0, 12);
}

const server = await startScriptedModelServer({ fallback: (request) => scriptedReply(request.messages) });

interface ChildOutcome {
  stdout: string;
  stderr: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
}

function runChild(args: string[]): Promise<ChildOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(args[0]!, args.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, CHILD_TIMEOUT_MS);
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ stdout, stderr, code, signal, timedOut });
    });
  });
}

function marked<T>(outcome: ChildOutcome, marker: string): T | undefined {
  const line = outcome.stdout.split('\n').find((l) => l.startsWith(marker));
  return line === undefined ? undefined : (JSON.parse(line.slice(marker.length)) as T);
}

/** Why a child produced no result, in a few words for a table cell. */
function crashText(outcome: ChildOutcome): string {
  if (outcome.timedOut) return `timed out after ${CHILD_TIMEOUT_MS / 1000} s`;
  if (/heap out of memory|Reached heap limit|Allocation failed/i.test(outcome.stderr))
    return `out of memory (${HEAP_CAP_MB / 1024} GiB heap cap)`;
  const lastLine = outcome.stderr.trim().split('\n').filter(Boolean).at(-1) ?? '';
  return `crashed (${outcome.signal ?? `exit ${outcome.code}`}${lastLine ? `: ${lastLine.slice(0, 160)}` : ''})`;
}

// ── The history files ─────────────────────────────────────────────────────────────────────────

const stamp = await formatStamp();
const cacheRoot = join(resultsDir, 'history');
const cacheDir = join(cacheRoot, stamp);
mkdirSync(cacheDir, { recursive: true });
// Files of another schema or builder are never read again: make room for these.
for (const entry of readdirSync(cacheRoot)) if (entry !== stamp) rmSync(join(cacheRoot, entry), { recursive: true, force: true });

interface Built {
  bytes: number;
  exchanges: number;
  seconds: number;
  lastRealExchange: string;
}

const fileOf = (size: Size) => join(cacheDir, `history-${size.bytes}.db`);
const metaOf = (size: Size) => join(cacheDir, `history-${size.bytes}.json`);

function freeBytes(): number {
  const stats = statfsSync(cacheDir);
  return stats.bavail * stats.bsize;
}

/** Builds (or finds) the file; a string says why there is none. */
async function historyFile(size: Size): Promise<Built | string> {
  if (existsSync(metaOf(size)) && existsSync(fileOf(size))) return JSON.parse(readFileSync(metaOf(size), 'utf8')) as Built;
  // The file, its WAL while building, and a working copy per measurement.
  const needed = size.bytes * 2.5;
  if (freeBytes() < needed) return `not built: ${Math.round(freeBytes() / MiB)} MiB free, ${Math.round(needed / MiB)} MiB needed`;
  const building = `${fileOf(size)}.building`;
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${building}${suffix}`, { force: true });
  const outcome = await runChild([...node, join(here, 'history-build.ts'), server.url, building, String(size.bytes)]);
  const built = marked<Built>(outcome, '@@built ');
  if (built === undefined) return `not built: ${crashText(outcome)}`;
  copyFileSync(building, fileOf(size));
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${building}${suffix}`, { force: true });
  writeFileSync(metaOf(size), JSON.stringify(built));
  return built;
}

// ── Measurements ──────────────────────────────────────────────────────────────────────────────

interface Sample {
  result: WakeResult;
  /** Admission → the first model request of the turn, on one clock (epoch milliseconds in both processes). */
  firstRequestMs?: number;
  contextMessages?: number;
  contextBytes?: number;
}

let asked = 0;
async function measure(size: Size): Promise<Sample | string> {
  const work = join(cacheDir, 'work.db');
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${work}${suffix}`, { force: true });
  copyFileSync(fileOf(size), work);
  // The copy's pages are written back now, not at the child's first commit: an fsync there would
  // wait for the whole copied file (0.4 s for 1 GB here), which is the bench's doing, not the wake's.
  const copied = openSync(work, 'r+');
  fsyncSync(copied);
  closeSync(copied);
  const key = `wake${++asked}`;
  try {
    const outcome = await runChild([
      ...node,
      '--expose-gc',
      `--max-old-space-size=${HEAP_CAP_MB}`,
      join(here, 'history-child.ts'),
      server.url,
      work,
      key,
    ]);
    const result = marked<WakeResult>(outcome, '@@result ');
    if (result === undefined) return crashText(outcome);
    const asks = (request: RecordedRequest) => request.messages.some((m) => m.role === 'user' && m.content.includes(question(key)));
    const first = server.requests.find(asks);
    return {
      result,
      ...(first === undefined
        ? {}
        : {
            firstRequestMs: first.receivedAt - result.dispatchedAt,
            contextMessages: first.messages.length,
            contextBytes: JSON.stringify(first.body).length,
          }),
    };
  } finally {
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${work}${suffix}`, { force: true });
  }
}

const built = new Map<Size, Built>();
const failures = new Map<Size, string>();
for (const size of SIZES) {
  const started = performance.now();
  const file = await historyFile(size);
  if (typeof file === 'string') failures.set(size, file);
  else {
    built.set(size, file);
    const took = (performance.now() - started) / 1000;
    console.log(
      `history ${size.label}: ${(file.bytes / MiB).toFixed(1)} MiB, ${file.exchanges} exchanges` +
        (took > 1 ? ` (built in ${file.seconds.toFixed(1)} s)` : ' (cached)') +
        (file.lastRealExchange === 'ok' ? '' : `; its last real exchange was ${file.lastRealExchange}`),
    );
  }
}

const samples = new Map<Size, Sample[]>(SIZES.map((size) => [size, []]));
const load: number[] = [];
for (let run = 0; run < RUNS; run++) {
  // Sizes alternate within a round, so a noisy moment slows all of them rather than one.
  for (const size of SIZES) {
    if (failures.has(size) || !built.has(size)) continue;
    const list = samples.get(size)!;
    // A refused, crashed or very slow size is measured once: repeating it says nothing new.
    const first = list[0];
    if (first !== undefined && (first.result.error !== undefined || (first.result.settledMs ?? 0) > SLOW_RUN_MS)) continue;
    load.push(loadavg()[0]!);
    const sample = await measure(size);
    if (typeof sample === 'string') failures.set(size, sample);
    else list.push(sample);
  }
}
await server.close();

// ── Figures ───────────────────────────────────────────────────────────────────────────────────

interface Figures {
  runs: number;
  /** Median admission → first model request, or the reason there is none. */
  firstRequest: number | string;
  receipt?: number;
  settled?: number;
  rssAdded: number;
  rssBefore: number;
  heapHeld: number;
  refused?: string;
  context?: string;
}

function figuresOf(size: Size): Figures | string {
  const failure = failures.get(size);
  if (failure !== undefined) return failure;
  const list = samples.get(size)!;
  if (list.length === 0) return 'not measured';
  const refused = list[0]!.result.error;
  const ms = (pick: (s: Sample) => number | undefined) => {
    const values = list.map(pick).filter((value): value is number => value !== undefined);
    return values.length === 0 ? undefined : median(values);
  };
  const firstRequest = ms((s) => s.firstRequestMs);
  return {
    runs: list.length,
    firstRequest:
      firstRequest ?? `refused after ${(ms((s) => s.result.errorAfterMs) ?? 0).toFixed(0)} ms (${refused ?? 'no model request seen'})`,
    receipt: ms((s) => s.result.receiptMs),
    settled: ms((s) => s.result.settledMs),
    rssAdded: median(list.map((s) => s.result.rssPeak - s.result.rssBefore)),
    rssBefore: median(list.map((s) => s.result.rssBefore)),
    heapHeld: median(list.map((s) => s.result.heapAfter - s.result.heapBefore)),
    ...(refused === undefined ? {} : { refused }),
    ...(list[0]!.contextMessages === undefined
      ? {}
      : { context: `${list[0]!.contextMessages} messages, ${Math.round(list[0]!.contextBytes! / 1024)} KiB` }),
  };
}

const fmtMs = (value: number) => `${value < 100 ? value.toFixed(1) : Math.round(value).toLocaleString('en')} ms`;
const fmtMiB = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;
const figures = new Map(SIZES.map((size) => [size, figuresOf(size)]));

console.log(
  `\nHistory: wake + one turn through the public API in a fresh process (Node, sqlite() file, medians; load average ${median(load.length ? load : [0]).toFixed(1)})`,
);
console.log(
  '| history | file | runs | admission → first model request | receipt | settled | RSS before | RSS added (peak) | heap held after | first request |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const size of SIZES) {
  const f = figures.get(size)!;
  const file = built.get(size);
  const fileText = file === undefined ? '—' : fmtMiB(file.bytes);
  if (typeof f === 'string') {
    console.log(`| ${size.label} | ${fileText} | 0 | ${f} | | | | | | |`);
    continue;
  }
  const opt = (value: number | undefined) => (value === undefined ? '—' : fmtMs(value));
  console.log(
    `| ${size.label} | ${fileText} | ${f.runs} | ${typeof f.firstRequest === 'number' ? fmtMs(f.firstRequest) : f.firstRequest} | ${opt(f.receipt)} | ${opt(f.settled)} | ${fmtMiB(f.rssBefore)} | +${fmtMiB(f.rssAdded)} | ${fmtMiB(f.heapHeld)} | ${f.context ?? '—'} |`,
  );
}

const TARGET = 1.2;
const base = figures.get(SIZES[0]!)!;
const rows: BenchRow[] = [];
for (const size of SIZES.slice(1)) {
  const f = figures.get(size)!;
  const runsNote = typeof f === 'string' ? undefined : `${f.runs} run${f.runs === 1 ? '' : 's'}`;
  const baseFirst = typeof base === 'string' ? base : base.firstRequest;
  const ours = typeof f === 'string' ? f : f.firstRequest;
  const ratio = typeof ours === 'number' && typeof baseFirst === 'number' ? ours / baseFirst : undefined;
  rows.push({
    figure: `wake + turn on ${size.label} of history: admission → first model request, vs on 1 MB`,
    ours: typeof ours === 'number' ? fmtMs(ours) : ours,
    baseline: typeof baseFirst === 'number' ? fmtMs(baseFirst) : baseFirst,
    ratio: ratio === undefined ? '—' : `${ratio.toFixed(2)}×`,
    target: `≤ ${TARGET}×`,
    met: ratio !== undefined && ratio <= TARGET,
    ...(runsNote === undefined ? {} : { note: `1 MB history; ${size.label}: ${runsNote}` }),
  });
  const rss = typeof f === 'string' ? undefined : f.rssAdded;
  const baseRss = typeof base === 'string' ? undefined : base.rssAdded;
  const rssRatio = rss !== undefined && baseRss !== undefined ? rss / baseRss : undefined;
  rows.push({
    figure: `RSS added by the wake + turn, ${size.label} of history vs 1 MB${typeof f !== 'string' && f.refused !== undefined ? ' (refused: the wake only)' : ''}`,
    ours: rss === undefined ? (f as string) : `+${fmtMiB(rss)}`,
    baseline: baseRss === undefined ? (base as string) : `+${fmtMiB(baseRss)}`,
    ratio: rssRatio === undefined ? '—' : `${rssRatio.toFixed(2)}×`,
    target: `≤ ${TARGET}×`,
    met: rssRatio !== undefined && rssRatio <= TARGET && (typeof f === 'string' || f.refused === undefined),
  });
}
saveRows('history', `Node, sqlite() file, a fresh process per wake, medians of up to ${RUNS} runs`, rows);
