/**
 * Load: 1,000 concurrent dispatches to one conversation until every one has settled, on Node with
 * a node:sqlite file, against a bare durable queue doing the least the same outcome needs, on the
 * same file settings and the same scripted model server, in the same run.
 *
 *   npm run bench:load
 *   BENCH_RUNS=9 npm run bench:load
 *
 * What each side does is in bench/README.md ("bench/node/load.ts"). Times are printed, never
 * asserted; a run whose work does not check out (a lost or duplicated submission, a wrong reply,
 * an unexpected number of model requests) fails the bench instead of printing a number.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { createModels, type Message, type Provider } from '@earendil-works/pi-ai';
import { dispatch, init, useModel } from '@flue/runtime';
import { sqlite, start } from '@flue/runtime/node';
import { scriptedProvider, startScriptedModelServer, type RecordedRequest } from '@flue/runtime/testing';
import { median, saveRows } from '../results.ts';

const COUNT = 1_000;
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const WARMUPS = 4;
/** Until all have settled, against the bare queue: the burst's target. */
const SETTLED_TARGET = 1.5;
const SYSTEM_PROMPT = 'Answer briefly.';
const bodies = Array.from({ length: COUNT }, (_, i) => `load-${i}`);

/** The model answers every request with the number of deliveries it was sent. */
const seen = (request: RecordedRequest) =>
  request.messages.filter((m) => m.role === 'user').flatMap((m) => m.content.match(/load-\d+/g) ?? []).length;
const server = await startScriptedModelServer({ fallback: (request) => ({ text: `saw ${seen(request)}` }) });
const provider = () => scriptedProvider({ baseUrl: server.url, id: 'scripted', models: ['model'], api: 'openai-completions' });
const dir = mkdtempSync(join(tmpdir(), 'flue-bench-load-'));

interface Sample {
  /** First dispatch to the last receipt. */
  admittedMs: number;
  /** First dispatch to the last settlement seen by its reader. */
  settledMs: number;
  /** CPU time of the process (user + system) over the same interval; steadier than wall time on a
   * shared machine. The scripted server runs in this process too, equally for both sides. */
  cpuMs: number;
  modelRequests: number;
}

function cpuSince(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
}

/** Checks the work of one run; a run that lost, duplicated or misanswered anything is no figure. */
function check(label: string, ids: string[], replies: string[], requestsBefore: number): number {
  if (new Set(ids).size !== COUNT) throw new Error(`${label}: ${new Set(ids).size} distinct submissions, expected ${COUNT}`);
  const requests = server.requests.slice(requestsBefore);
  // Every reply is the answer of a model request, and the last request saw every delivery.
  const answers = new Set(requests.map((request) => `saw ${seen(request)}`));
  const stray = replies.filter((reply) => !answers.has(reply));
  if (stray.length > 0) throw new Error(`${label}: ${stray.length} replies are no model answer, e.g. ${JSON.stringify(stray[0])}`);
  if (requests.length === 0 || seen(requests.at(-1)!) !== COUNT)
    throw new Error(`${label}: the last model request did not carry all ${COUNT} deliveries`);
  return requests.length;
}

// ── Ours: start(), dispatch() ×1,000, read() ×1,000 ─────────────────────────────────────────

function LoadAgent() {
  useModel('scripted/model');
  return SYSTEM_PROMPT;
}

async function ours(run: string): Promise<Sample> {
  const flue = await start({ agents: [LoadAgent], db: sqlite(join(dir, `ours-${run}.db`)), providers: [provider()], env: {} });
  try {
    const before = server.requests.length;
    const cpu = process.cpuUsage();
    const started = performance.now();
    const receipts = await Promise.all(bodies.map((body) => dispatch(LoadAgent, { id: 'load', message: body })));
    const admittedMs = performance.now() - started;
    const handle = init(LoadAgent, { id: 'load' });
    const replies = await Promise.all(receipts.map((receipt) => handle.read(receipt)));
    const settledMs = performance.now() - started;
    const cpuMs = cpuSince(cpu);
    const modelRequests = check(
      'ours',
      receipts.map((r) => r.submissionId),
      replies.map((r) => r.text),
      before,
    );
    return { admittedMs, settledMs, cpuMs, modelRequests };
  } finally {
    await flue.stop();
  }
}

// ── Baseline: a bare durable queue on node:sqlite plus pi-ai ──────────────────────────────────

/**
 * The least a durable single-conversation queue does for the same outcome: each admission is one
 * SELECT (does the conversation exist) and one INSERT transaction; one pass then appends every
 * queued input to the log in one transaction, makes one pi-ai call with all of them, and settles
 * them all in one transaction. Readers wait on an in-memory promise per submission.
 */
async function baseline(run: string): Promise<Sample> {
  const db = new DatabaseSync(join(dir, `baseline-${run}.db`));
  // The pragmas sqlite() sets on a file database.
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = NORMAL');
  db.exec(`CREATE TABLE streams (stream TEXT PRIMARY KEY, incarnation TEXT NOT NULL) WITHOUT ROWID;
           CREATE TABLE queue (ord INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, stream TEXT NOT NULL, body TEXT NOT NULL,
                               accepted_at TEXT NOT NULL, settled_at INTEGER, reply TEXT);
           CREATE INDEX queue_open ON queue (stream, ord) WHERE settled_at IS NULL;
           CREATE TABLE log (stream TEXT NOT NULL, seq INTEGER NOT NULL, records TEXT NOT NULL, PRIMARY KEY (stream, seq)) WITHOUT ROWID;`);
  const getStream = db.prepare('SELECT incarnation FROM streams WHERE stream = ?');
  const createStream = db.prepare('INSERT INTO streams (stream, incarnation) VALUES (?, ?)');
  const insert = db.prepare('INSERT INTO queue (id, stream, body, accepted_at) VALUES (?, ?, ?, ?)');
  const open = db.prepare('SELECT id, body FROM queue WHERE stream = ? AND settled_at IS NULL ORDER BY ord');
  const append = db.prepare('INSERT INTO log (stream, seq, records) VALUES (?, ?, ?)');
  const settle = db.prepare('UPDATE queue SET settled_at = ?, reply = ? WHERE id = ?');
  const models = createModels();
  // @flue/runtime declares providers by the members it reads; the object is pi-ai's own.
  models.setProvider(provider() as Provider);
  const model = models.getModel('scripted', 'model')!;
  const history: Message[] = [];
  const waiting = new Map<string, (reply: string) => void>();
  let seq = 0;
  let running: Promise<void> | undefined;

  const pass = async () => {
    const rows = open.all('load') as { id: string; body: string }[];
    db.exec('BEGIN IMMEDIATE');
    for (const row of rows) append.run('load', seq++, JSON.stringify([{ type: 'user_message', submissionId: row.id, body: row.body }]));
    db.exec('COMMIT');
    for (const row of rows) history.push({ role: 'user', content: row.body, timestamp: Date.now() });
    const stream = models.streamSimple(model, { systemPrompt: SYSTEM_PROMPT, messages: history });
    for await (const _event of stream) {
      // read every streamed event, as any consumer of a streamed reply does
    }
    const message = await stream.result();
    if (message.stopReason !== 'stop') throw new Error(`baseline: model call ended with ${message.stopReason}`);
    history.push(message);
    const text = message.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
    const now = Date.now();
    db.exec('BEGIN IMMEDIATE');
    append.run(
      'load',
      seq++,
      JSON.stringify([{ type: 'assistant', message }, ...rows.map((row) => ({ type: 'settled', submissionId: row.id }))]),
    );
    for (const row of rows) settle.run(now, text, row.id);
    db.exec('COMMIT');
    for (const row of rows) waiting.get(row.id)!(text);
  };
  const wake = () => {
    if (running !== undefined) return;
    running = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
      while ((open.all('load') as unknown[]).length > 0) await pass();
      running = undefined;
    });
  };
  const admit = async (body: string): Promise<{ id: string; settled: Promise<string> }> => {
    const id = `sub_${crypto.randomUUID()}`;
    const exists = getStream.get('load') !== undefined;
    db.exec('BEGIN IMMEDIATE');
    if (!exists) createStream.run('load', 'inc_bench');
    insert.run(id, 'load', body, new Date().toISOString());
    db.exec('COMMIT');
    const settled = new Promise<string>((resolve) => waiting.set(id, resolve));
    wake();
    return { id, settled };
  };

  try {
    const before = server.requests.length;
    const cpu = process.cpuUsage();
    const started = performance.now();
    const receipts = await Promise.all(bodies.map((body) => admit(body)));
    const admittedMs = performance.now() - started;
    const replies = await Promise.all(receipts.map((receipt) => receipt.settled));
    const settledMs = performance.now() - started;
    const cpuMs = cpuSince(cpu);
    const modelRequests = check(
      'baseline',
      receipts.map((r) => r.id),
      replies,
      before,
    );
    return { admittedMs, settledMs, cpuMs, modelRequests };
  } finally {
    db.close();
  }
}

// ── Runs ─────────────────────────────────────────────────────────────────────────────────────

try {
  // Discarded warm-up runs of each: module loading and JIT belong to neither figure. Ours runs far
  // more code than the bare queue: after one warm-up its next three runs still took 1.3–2× its
  // later ones (the bare queue's 1.1–1.3×), so one warm-up left its JIT in the figures.
  for (let warmup = 0; warmup < WARMUPS; warmup++) {
    await ours(`warmup-${warmup}`);
    await baseline(`warmup-${warmup}`);
  }
  const samples = { ours: [] as Sample[], baseline: [] as Sample[] };
  for (let run = 0; run < RUNS; run++) {
    // Alternate who goes first, so neither always runs on a warmer (or busier) machine.
    if (run % 2 === 0) {
      samples.ours.push(await ours(String(run)));
      samples.baseline.push(await baseline(String(run)));
    } else {
      samples.baseline.push(await baseline(String(run)));
      samples.ours.push(await ours(String(run)));
    }
  }

  const med = (side: Sample[], key: keyof Sample) => median(side.map((sample) => sample[key]));
  const admitted = { ours: med(samples.ours, 'admittedMs'), baseline: med(samples.baseline, 'admittedMs') };
  const settled = { ours: med(samples.ours, 'settledMs'), baseline: med(samples.baseline, 'settledMs') };
  const cpu = { ours: med(samples.ours, 'cpuMs'), baseline: med(samples.baseline, 'cpuMs') };
  const perSecond = (ms: number) => `${Math.round((COUNT / ms) * 1000).toLocaleString('en-US')}/s`;
  const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
  const rows = [
    {
      figure: `admit ${COUNT.toLocaleString('en-US')} concurrent dispatches to one conversation (wall, first call to last receipt)`,
      ours: `${admitted.ours.toFixed(0)} ms (${perSecond(admitted.ours)})`,
      baseline: `${admitted.baseline.toFixed(0)} ms (${perSecond(admitted.baseline)})`,
      ratio: ratio(admitted.ours, admitted.baseline),
      target: 'reported',
      met: true,
      note: `bare queue: ${COUNT.toLocaleString('en-US')} SELECT + INSERT transactions`,
    },
    {
      figure: `${COUNT.toLocaleString('en-US')} concurrent dispatches until every one has settled (wall, first call to last settlement)`,
      ours: `${settled.ours.toFixed(0)} ms (${perSecond(settled.ours)})`,
      baseline: `${settled.baseline.toFixed(0)} ms (${perSecond(settled.baseline)})`,
      ratio: ratio(settled.ours, settled.baseline),
      target: `≤ ${SETTLED_TARGET}×`,
      met: settled.ours / settled.baseline <= SETTLED_TARGET,
      note: 'bare queue: the same admissions, one pass, one pi-ai call',
    },
    {
      figure: `… CPU time over the same interval (user + system, this process)`,
      ours: `${cpu.ours.toFixed(0)} ms`,
      baseline: `${cpu.baseline.toFixed(0)} ms`,
      ratio: ratio(cpu.ours, cpu.baseline),
      target: 'reported',
      met: true,
    },
  ];
  console.log(
    `Load: ${COUNT} concurrent dispatches to one conversation (median of ${RUNS} runs, Node ${process.versions.node}, node:sqlite file, WAL)`,
  );
  console.log('| figure | ours | baseline | ratio | target | met? |');
  console.log('| --- | --- | --- | --- | --- | --- |');
  for (const row of rows)
    console.log(
      `| ${row.figure} | ${row.ours} | ${row.note ? `${row.baseline} (${row.note})` : row.baseline} | ${row.ratio} | ${row.target} | ${row.met ? 'yes' : 'NO'} |`,
    );
  const perRun = (key: keyof Sample) => samples.ours.map((sample, i) => (sample[key] / samples.baseline[i]![key]).toFixed(2)).join(', ');
  const perRunMedian = (key: keyof Sample) => median(samples.ours.map((sample, i) => sample[key] / samples.baseline[i]![key])).toFixed(2);
  console.log(
    `median of per-run ratios: admitted ${perRunMedian('admittedMs')}×, settled ${perRunMedian('settledMs')}×, CPU ${perRunMedian('cpuMs')}×`,
  );
  console.log(`per-run ratios: admitted ${perRun('admittedMs')}; settled ${perRun('settledMs')}; CPU ${perRun('cpuMs')}`);
  console.log(
    `model requests per run: ours ${samples.ours.map((s) => s.modelRequests).join(', ')}; baseline ${samples.baseline.map((s) => s.modelRequests).join(', ')}`,
  );
  const raw = (side: Sample[]) => side.map((s) => `${s.admittedMs.toFixed(0)}/${s.settledMs.toFixed(0)}/${s.cpuMs.toFixed(0)}`).join(', ');
  console.log(`raw ms (admitted/settled/CPU): ours ${raw(samples.ours)}`);
  console.log(`                               baseline ${raw(samples.baseline)}`);
  console.log(
    `load average: ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}`,
  );
  saveRows('load', `Node ${process.versions.node}, node:sqlite file (WAL), ${COUNT} dispatches, medians of ${RUNS} runs`, rows);
} finally {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
}
