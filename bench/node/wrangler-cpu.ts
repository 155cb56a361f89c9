/**
 * What a Worker costs in CPU: a built Flue project and a bare Worker + Durable Object, both served
 * by `wrangler dev` (offline), measured by the CPU time of each one's workerd process.
 *
 *   npm run bench -- wrangler          # BENCH_RUNS (default 2) runs of each scenario
 *
 * (1) turns: conversations of 20 turns (one `lookup` tool call and a 200-chunk reply each); the
 *     figure is workerd CPU per turn, and the mean of turns 16–20 against turn 1.
 * (2) fan-out: 200 one-turn conversations at once; wall time and workerd CPU.
 * See bench/README.md for why process CPU is the honest figure here.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeDir, templateCopy, writeFiles } from '../../src/build/test-project.ts';
import { buildProject, startWranglerDev, type DevServer } from '../../test/support/wrangler-dev.ts';
import { type BenchRow, median, saveRows } from '../results.ts';
import { startSideBySideServer } from './side-by-side-server.ts';
import { AGENT, ROUTE } from './wrangler-cpu-project.ts';
import { expectedReply, question } from './side-by-side-script.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 2);
const TURNS = 20;
/** Turn i of this many conversations is measured as one interval, to smooth scheduling noise. */
const CONVERSATIONS_PER_TURN = 3;
const FANOUT = 200;
const WARMUP_TURNS = 3;

const bareDir = fileURLToPath(new URL('../workers/bare-turns/', import.meta.url));
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

interface Side {
  name: 'ours' | 'bare';
  dev: DevServer;
  processes: { worker: number; proxy: number[]; wrangler: number[] };
}

const sum = (pids: number[]) => pids.reduce((total, pid) => total + cpuMs(pid), 0);

/**
 * CPU time of a process in ms at nanosecond resolution: the sum of its threads' time on CPU
 * (`/proc/<pid>/task/<tid>/schedstat`, first field). Threads that exited are not in it; the
 * run's total is cross-checked against `/proc/<pid>/stat` (which keeps them, at 10 ms ticks).
 */
function cpuMs(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread exited meanwhile
    }
  }
  return ns / 1e6;
}

/** user + system CPU of a process in ms (all its threads, including exited ones), in clock ticks. */
function tickCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
}

/**
 * The processes of one `wrangler dev` (its process group): the workerd that runs the Worker (the
 * one with an inspector port), the workerd of wrangler's own proxy Worker (which owns the public
 * port and forwards every request), and wrangler's Node processes.
 */
function processesOf(group: number): { worker: number; proxy: number[]; wrangler: number[] } {
  let worker: number | undefined;
  const proxy: number[] = [];
  const wrangler: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
      if (pgrp !== group) continue;
      if (comm === 'workerd') {
        const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
        if (args.some((arg) => arg.startsWith('--inspector-addr'))) worker = Number(entry);
        else proxy.push(Number(entry));
      } else if (comm === 'node') wrangler.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  if (worker === undefined) throw new Error(`no workerd with an inspector in process group ${group}`);
  return { worker, proxy, wrangler };
}

async function turn(side: Side, conversation: string, key: string): Promise<void> {
  const response = await fetch(`${side.dev.base}/turn/${conversation}`, { method: 'POST', body: question(key) });
  const body = (await response.json()) as { reply?: string };
  if (response.status !== 200 || body.reply !== expectedReply(key)) {
    throw new Error(`${side.name}: turn ${conversation}/${key} answered ${response.status} ${JSON.stringify(body).slice(0, 300)}`);
  }
}

interface Sample {
  /** The Worker's workerd. */
  cpu: number;
  /** wrangler's proxy workerd. */
  proxy: number;
  /** wrangler's Node processes. */
  wrangler: number;
  /** This process: the scripted model server and the HTTP client. */
  bench: number;
  wall: number;
}

/** CPU of each process of the side, and wall time, over `work`. */
async function measure(side: Side, work: () => Promise<void>): Promise<Sample> {
  const { worker, proxy, wrangler } = side.processes;
  const before = [cpuMs(worker), sum(proxy), sum(wrangler)] as const;
  const self = process.cpuUsage();
  const t0 = performance.now();
  await work();
  const wall = performance.now() - t0;
  const used = process.cpuUsage(self);
  return {
    cpu: cpuMs(worker) - before[0],
    proxy: sum(proxy) - before[1],
    wrangler: sum(wrangler) - before[2],
    bench: (used.user + used.system) / 1000,
    wall,
  };
}

/** Per turn index: mean workerd CPU per turn over CONVERSATIONS_PER_TURN conversations. */
async function turnsScenario(side: Side, run: number): Promise<number[]> {
  const perTurn: number[] = [];
  const ids = Array.from({ length: CONVERSATIONS_PER_TURN }, (_, c) => `turns-${run}-${c}`);
  for (let t = 1; t <= TURNS; t++) {
    const { cpu } = await measure(side, async () => {
      for (const id of ids) await turn(side, id, `${id}-t${t}`);
    });
    perTurn.push(cpu / ids.length);
  }
  return perTurn;
}

async function fanoutScenario(side: Side, run: number): Promise<Sample> {
  return measure(side, async () => {
    await Promise.all(Array.from({ length: FANOUT }, (_, c) => turn(side, `fan-${run}-${c}`, `fan-${run}-${c}`)));
  });
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const ms = (value: number) => `${value.toFixed(1)} ms`;
const times = (value: number) => `${value.toFixed(2)}×`;

const server = await startSideBySideServer();
const project = templateCopy('bench-wrangler-cpu');
const sides: Side[] = [];
try {
  writeFiles(project, { 'src/agents/bench.ts': AGENT });
  const app = path.join(project, 'src/app.ts');
  writeFileSync(app, readFileSync(app, 'utf8').replace('export default app;', `${ROUTE}\nexport default app;`));
  const wrangler = path.join(project, 'wrangler.jsonc');
  writeFileSync(wrangler, readFileSync(wrangler, 'utf8').replace('["FlueHelloAgent"]', '["FlueHelloAgent", "FlueBenchAgent"]'));
  buildProject(project);
  const ours = await startWranglerDev(project, { FLUE_SCRIPTED_MODEL_URL: server.url });
  sides.push({ name: 'ours', dev: ours, processes: processesOf(ours.pid) });
  const bare = await startWranglerDev(bareDir, { MODEL_URL: server.url }, 90_000, 'wrangler.jsonc');
  sides.push({ name: 'bare', dev: bare, processes: processesOf(bare.pid) });

  // Warm-up: module load, the first pi-ai call and JIT of both paths belong to neither figure.
  for (const side of sides) {
    for (let t = 1; t <= WARMUP_TURNS; t++) await turn(side, 'warmup', `warmup-${t}`);
    await Promise.all(Array.from({ length: 20 }, (_, c) => turn(side, `warm-fan-${c}`, `warm-fan-${c}`)));
  }

  const turns: Record<string, number[][]> = { ours: [], bare: [] };
  const fan: Record<string, Sample[]> = { ours: [], bare: [] };
  const requestsBefore = server.requests.length;
  const ticksBefore = sides.map((side) => [tickCpuMs(side.processes.worker), cpuMs(side.processes.worker)]);
  for (let run = 0; run < RUNS; run++) {
    const order = run % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) turns[side.name]!.push(await turnsScenario(side, run));
    for (const side of order) fan[side.name]!.push(await fanoutScenario(side, run));
  }
  const exchanges = RUNS * 2 * (TURNS * CONVERSATIONS_PER_TURN + FANOUT);
  if (server.requests.length - requestsBefore !== exchanges * 2) {
    throw new Error(`expected ${exchanges * 2} model requests, the server saw ${server.requests.length - requestsBefore}`);
  }

  sides.forEach((side, i) => {
    const [ticks, ns] = ticksBefore[i]!;
    console.log(`${side.name}: Worker workerd CPU over all runs: ${(tickCpuMs(side.processes.worker) - ticks!).toFixed(0)} ms by /proc stat, ${(cpuMs(side.processes.worker) - ns!).toFixed(0)} ms by thread schedstat`);
  });
  const perTurn = (name: string) => median(turns[name]!.map(mean));
  const late = (name: string) => median(turns[name]!.map((series) => mean(series.slice(15))));
  const first = (name: string) => median(turns[name]!.map((series) => series[0]!));
  const fanFigure = (name: string, key: keyof Sample) => median(fan[name]!.map((sample) => sample[key]));

  const cpuRatio = perTurn('ours') / perTurn('bare');
  const flat = late('ours') / first('ours');
  const fanWall = fanFigure('ours', 'wall') / fanFigure('bare', 'wall');
  const fanCpu = fanFigure('ours', 'cpu') / fanFigure('bare', 'cpu');
  const rows: BenchRow[] = [
    { figure: '(1) workerd CPU per turn, 20-turn conversations', ours: ms(perTurn('ours')), baseline: ms(perTurn('bare')), ratio: times(cpuRatio), target: '≤ 1.3×', met: cpuRatio <= 1.3, note: 'bare Worker + DO, pi-ai alone' },
    {
      figure: '(1) flat: workerd CPU of turns 16–20 vs turn 1',
      ours: ms(late('ours')),
      baseline: ms(first('ours')),
      ratio: times(flat),
      target: '≤ 1.2×',
      met: flat <= 1.2,
      note: `baseline: our own turn 1; bare ${times(late('bare') / first('bare'))}`,
    },
    { figure: `(2) ${FANOUT} one-turn conversations at once, wall`, ours: ms(fanFigure('ours', 'wall')), baseline: ms(fanFigure('bare', 'wall')), ratio: times(fanWall), target: '≤ 1.5×', met: fanWall <= 1.5 },
    { figure: `(2) ${FANOUT} one-turn conversations at once, workerd CPU`, ours: ms(fanFigure('ours', 'cpu')), baseline: ms(fanFigure('bare', 'cpu')), ratio: times(fanCpu), target: '≤ 1.5×', met: fanCpu <= 1.5 },
  ];
  saveRows('wrangler-dev-cpu', `wrangler dev, workerd process CPU from /proc, median of ${RUNS} runs`, rows);
  console.log(`\nload average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  for (const name of ['ours', 'bare']) {
    console.log(`${name}: per-turn CPU series (median over runs, ms): ${Array.from({ length: TURNS }, (_, t) => median(turns[name]!.map((s) => s[t]!)).toFixed(1)).join(' ')}`);
    console.log(`${name}: fan-out samples: ${fan[name]!.map((s) => `wall ${s.wall.toFixed(0)} ms, workerd ${s.cpu.toFixed(0)} ms, proxy workerd ${s.proxy.toFixed(0)} ms, wrangler node ${s.wrangler.toFixed(0)} ms, bench process (model server + client) ${s.bench.toFixed(0)} ms`).join('; ')}`);
  }
  for (const row of rows) console.log(`${row.figure}: ours ${row.ours}, baseline ${row.baseline}, ${row.ratio} (target ${row.target}) ${row.met ? 'met' : 'MISSED'}`);
} finally {
  for (const side of sides) await side.dev.stop();
  await server.close();
  removeDir(project);
}
