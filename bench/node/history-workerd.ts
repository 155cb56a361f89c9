/**
 * History in workerd: a conversation holding 200 MB of history, in its Durable Object's SQLite on
 * `wrangler dev`, takes a new message after a restart (the wake), settles it, and must stay well
 * inside the 128 MB a Worker's isolate may use on Cloudflare.
 *
 *   npm run bench -- history-workerd
 *
 * 1. `flue build` of a project with the history agent (history-workerd-project.ts), on a first
 *    `wrangler dev`: the seed exchanges through the public API (`POST /turn`), then segments of
 *    copied exchanges appended inside the object through the store (bench-only RPC) until its
 *    database holds 200 MB; then one more real exchange on a second `wrangler dev`.
 * 2. A third `wrangler dev` on the same persisted state, with the inspector: a warm-up turn on
 *    another conversation (so the agent's code is loaded), a full GC, then the measured turn on the
 *    long conversation, then a full GC again.
 *
 * workerd enforces no memory limit of its own (it leaves that to the sandbox around it), so a run
 * that stays alive proves nothing; the figures are read instead (see bench/README.md):
 * - the isolate's JS heap, through the DevTools protocol (`HeapProfiler.collectGarbage`, then
 *   `Runtime.getHeapUsage`), before and after the turn, and sampled every 20 ms during it (samples
 *   can miss a short peak, so the highest is a lower bound);
 * - the workerd process's peak RSS over the turn (`VmHWM` in /proc, reset through `clear_refs`
 *   right before): everything the process holds, SQLite's page cache included, so an upper bound.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { removeDir, templateCopy } from '../../src/build/test-project.ts';
import { startScriptedModelServer } from '@flue/runtime/testing';
import { buildProject, freePort, startWranglerDev } from '../../test/support/wrangler-dev.ts';
import { SEED_KEYS, type HistoryCursor } from '../history-segments.ts';
import { type BenchRow, saveRows } from '../results.ts';
import { writeHistoryProject } from './history-workerd-project.ts';
import { processesOf } from './wrangler-processes.ts';
import { answer, question, scriptedReply } from './history-script.ts';

/** `BENCH_HISTORY_MB` shrinks it for a quick look at the machinery. */
const HISTORY_BYTES = Number(process.env.BENCH_HISTORY_MB ?? 200) * 1e6;
const INSPECTOR_TIMEOUT_MS = 30_000;
const TURN_TIMEOUT_MS = 180_000;
const SEGMENTS_PER_CALL = 10;
const HEAP_TARGET_MB = 64;
const MiB = 1024 * 1024;
const CONVERSATION = 'long-lived';

const server = await startScriptedModelServer({ fallback: (request) => scriptedReply(request.messages) });
const project = templateCopy('bench-history-workerd');
const vars = { FLUE_SCRIPTED_MODEL_URL: server.url };

async function turn(base: string, conversation: string, key: string): Promise<{ reply?: string; receiptMs?: number; error?: string }> {
  const response = await fetch(`${base}/turn/${conversation}`, {
    method: 'POST',
    body: question(key),
    signal: AbortSignal.timeout(TURN_TIMEOUT_MS),
  });
  const body = (await response.json()) as { reply?: string; receiptMs?: number; error?: string; type?: string };
  if (body.reply !== undefined && body.reply !== answer(key)) throw new Error(`turn ${key} answered ${JSON.stringify(body).slice(0, 300)}`);
  return body.error === undefined ? body : { error: `${body.type ? `${body.type}: ` : ''}${body.error}` };
}

function statusKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`));
  return Number(line?.split(/\s+/)[1]);
}

/** A DevTools protocol session on the Worker's isolate, through wrangler's inspector proxy. */
async function inspector(port: number): Promise<{ send: (method: string) => Promise<unknown>; close: () => void }> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as { webSocketDebuggerUrl: string }[];
  // wrangler's inspector proxy accepts DevTools connections from local origins only.
  const socket = new WebSocket(targets[0]!.webSocketDebuggerUrl, { headers: { origin: 'http://localhost' } } as unknown as string[]);
  await new Promise((resolve, reject) => {
    socket.addEventListener('open', resolve, { once: true });
    socket.addEventListener('error', reject, { once: true });
  });
  let nextId = 1;
  const pending = new Map<number, { resolve: (result: unknown) => void; reject: (error: Error) => void }>();
  socket.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: { message: string } };
    if (message.id === undefined) return;
    const waiter = pending.get(message.id);
    pending.delete(message.id);
    if (message.error !== undefined) waiter?.reject(new Error(message.error.message));
    else waiter?.resolve(message.result);
  });
  return {
    send: (method) =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        const timer = setTimeout(
          () => reject(new Error(`inspector: no answer to ${method} in ${INSPECTOR_TIMEOUT_MS} ms`)),
          INSPECTOR_TIMEOUT_MS,
        );
        pending.set(id, {
          resolve: (result) => {
            clearTimeout(timer);
            resolve(result);
          },
          reject: (error) => {
            clearTimeout(timer);
            reject(error);
          },
        });
        socket.send(JSON.stringify({ id, method, params: {} }));
      }),
    close: () => socket.close(),
  };
}

const rows: BenchRow[] = [];
try {
  writeHistoryProject(project);
  buildProject(project);

  // ── 1. The history ──────────────────────────────────────────────────────────────────────────
  const buildStarted = performance.now();
  const builder = await startWranglerDev(project, vars);
  let databaseBytes = 0;
  try {
    for (const key of SEED_KEYS) {
      const seeded = await turn(builder.base, CONVERSATION, key);
      if (seeded.error !== undefined) throw new Error(`seed exchange ${key}: ${seeded.error}`);
    }
    let cursor: HistoryCursor | undefined;
    while (databaseBytes < HISTORY_BYTES) {
      const response = await fetch(`${builder.base}/bench/history/${CONVERSATION}`, {
        method: 'POST',
        body: JSON.stringify({ segments: SEGMENTS_PER_CALL, cursor }),
      });
      if (!response.ok) throw new Error(`appending history: ${response.status} ${await response.text()}`);
      ({ cursor, databaseBytes } = (await response.json()) as { cursor: HistoryCursor; databaseBytes: number });
    }
  } finally {
    await builder.stop();
  }
  // The segments were written behind the back of the object's engine, which keeps its fold (and the
  // log's head) in memory: the last real exchange runs on a fresh start, which wakes from the store.
  const finisher = await startWranglerDev(project, vars);
  let lastRealExchange: string;
  try {
    const last = await turn(finisher.base, CONVERSATION, 'built');
    lastRealExchange = last.error ?? 'ok';
  } finally {
    await finisher.stop();
  }
  console.log(
    `history: ${(databaseBytes / MiB).toFixed(1)} MiB in the object's database, built in ${((performance.now() - buildStarted) / 1000).toFixed(1)} s` +
      (lastRealExchange === 'ok' ? '' : `; its last real exchange was refused: ${lastRealExchange}`),
  );

  // ── 2. The wake and the turn ───────────────────────────────────────────────────────────────
  const inspectorPort = await freePort();
  const dev = await startWranglerDev(project, vars, 90_000, '.flue.wrangler.json', ['--inspector-port', String(inspectorPort)]);
  try {
    console.log('restarted with the inspector; a warm-up turn on another conversation');
    const warm = await turn(dev.base, 'warm-up', 'warm');
    if (warm.error !== undefined) throw new Error(`warm-up turn: ${warm.error}`);
    const workerd = processesOf(dev.pid).worker;
    const devtools = await inspector(inspectorPort);
    // workerd runs the collection on the isolate's thread at its next task: a request gives it one.
    const heapUsed = async () => {
      const collected = devtools.send('HeapProfiler.collectGarbage');
      await (await fetch(`${dev.base}/bench/ping`)).text();
      await collected;
      return ((await devtools.send('Runtime.getHeapUsage')) as { usedSize: number }).usedSize;
    };
    const heapBefore = await heapUsed();
    console.log(`isolate heap before: ${(heapBefore / MiB).toFixed(1)} MiB; the measured turn on the long conversation`);
    const rssBefore = statusKiB(workerd, 'VmRSS') * 1024;
    writeFileSync(`/proc/${workerd}/clear_refs`, '5'); // resets VmHWM to the current RSS
    let sampledPeak = heapBefore;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const usage = (await devtools.send('Runtime.getHeapUsage')) as { usedSize: number };
        sampledPeak = Math.max(sampledPeak, usage.usedSize);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const started = performance.now();
    const measured = await turn(dev.base, CONVERSATION, 'measured');
    const settledMs = performance.now() - started;
    sampling = false;
    await sampler;
    const rssPeak = statusKiB(workerd, 'VmHWM') * 1024;
    const heapAfter = await heapUsed();
    devtools.close();

    const settled = measured.error === undefined;
    console.log(
      `wake + turn on ${(databaseBytes / MiB).toFixed(0)} MiB of history: ${settled ? `settled in ${settledMs.toFixed(0)} ms (receipt ${measured.receiptMs} ms)` : `refused after ${settledMs.toFixed(0)} ms: ${measured.error}`}\n` +
        `isolate JS heap: ${(heapBefore / MiB).toFixed(1)} MiB before, ${(heapAfter / MiB).toFixed(1)} MiB after (after a full GC each), sampled peak ${(sampledPeak / MiB).toFixed(1)} MiB\n` +
        `workerd process RSS: ${(rssBefore / MiB).toFixed(1)} MiB before, peak ${(rssPeak / MiB).toFixed(1)} MiB during the wake and turn`,
    );
    const label = `${Math.round(databaseBytes / 1e6)} MB`;
    rows.push(
      {
        figure: `a conversation with ${label} of history takes a new message after a restart and settles it`,
        ours: settled ? `settled in ${settledMs.toFixed(0)} ms` : `refused after ${settledMs.toFixed(0)} ms (${measured.error})`,
        baseline: '—',
        ratio: '—',
        target: 'settles',
        met: settled,
      },
      {
        figure: `… isolate JS heap used after that turn (full GC; DevTools protocol)`,
        ours: `${(heapAfter / MiB).toFixed(1)} MiB`,
        baseline: `${(heapBefore / MiB).toFixed(1)} MiB`,
        ratio: `+${((heapAfter - heapBefore) / MiB).toFixed(1)} MiB`,
        target: `≤ ${HEAP_TARGET_MB} MiB`,
        met: settled && heapAfter <= HEAP_TARGET_MB * MiB,
        note: 'before the turn, a warm-up conversation loaded',
      },
      {
        figure: '… isolate JS heap, highest sample during the wake and turn (every 20 ms; a lower bound)',
        ours: `${(sampledPeak / MiB).toFixed(1)} MiB`,
        baseline: '—',
        ratio: '—',
        target: '—',
        met: true,
      },
      {
        figure:
          "… workerd process RSS added at its peak during the wake and turn (an upper bound: SQLite's cache and workerd's own included)",
        ours: `+${((rssPeak - rssBefore) / MiB).toFixed(1)} MiB`,
        baseline: `${(rssBefore / MiB).toFixed(1)} MiB`,
        ratio: '—',
        target: `≤ +${HEAP_TARGET_MB} MiB`,
        met: settled && rssPeak - rssBefore <= HEAP_TARGET_MB * MiB,
        note: 'the process before the turn',
      },
    );
  } finally {
    await dev.stop();
  }
} finally {
  await server.close();
  removeDir(project);
}
saveRows('history in workerd', 'wrangler dev (local workerd), one run', rows);
