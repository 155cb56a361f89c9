/**
 * What a Worker costs in CPU: a built Flue project, a bare Worker + Durable Object and the same
 * agent on the Cloudflare Agents SDK, each served by its own `wrangler dev` (offline), measured by
 * the CPU time of each one's workerd process.
 *
 *   npm run bench -- wrangler          # BENCH_RUNS (default 3) runs of each scenario ((1) for ours and bare TURNS_SAMPLES times in each, (2) and (3) LOAD_SAMPLES times)
 *
 * (1) turns: conversations of 20 turns (one `lookup` tool call and a 200-chunk reply each), ours'
 *     and the bare Worker's turn by turn together; the figure is workerd CPU per turn, and the mean
 *     of turns 16–20 against turn 1. The same turns
 *     also give rows written per turn (a storage meter in every object) and the time from sending
 *     a turn to the model server receiving its first request. All three sides.
 * (2) fan-out: 200 one-turn conversations at once; wall time and workerd CPU. Ours and bare.
 * (3) burst: 250 concurrent sends to one conversation; wall time and workerd CPU. Ours and bare,
 *     and the bare Worker again with its sends as `read(await dispatch(text))` is: two calls to
 *     its object, one for a receipt, one for the reply.
 *     (2) and (3) read no meter, so they run with both sides' meters paused.
 * (4) the bill: one turn whose reply streams for 10 s, metered like (1), then both kinds of turn
 *     priced on Cloudflare's price list (bench/pricing.ts), dollars per million turns. All three sides.
 * See bench/README.md for why process CPU is the honest figure here.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeDir, templateCopy } from '../../src/build/test-project.ts';
import { buildProject, startWranglerDev, type DevServer } from '../../test/support/wrangler-dev.ts';
import { type BenchRow, median, saveRows } from '../results.ts';
import { BILL_LINES, type Bill, type TurnUsage, billPerMillionTurns, billTotal, dollars, dominantLine } from '../pricing.ts';
import { startSideBySideServer } from './side-by-side-server.ts';
import { writeBenchProject } from './wrangler-cpu-project.ts';
import { cpuMs, processesOf, withoutLocalTraceCollector } from './wrangler-processes.ts';
import { type Route, WARMUP_BURSTS, lapse as lapseNow, turn as sendTurn } from './wrangler-turn.ts';
import { SLOW_KEY_PREFIX, SLOW_STREAM_MS, expectedReply } from './side-by-side-script.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const TURNS = 20;
/** Turn i of this many conversations is measured as one interval, to smooth scheduling noise. */
const CONVERSATIONS_PER_TURN = 3;
const FANOUT = 200;
const BURST = 250;
/**
 * (2) and (3) run this many times per side in each run, the sides alternating: one sample of
 * either moves by a tenth between back-to-back runs, so two per side could not settle a margin of
 * a few hundredths (each takes a few seconds, where a run of (1) and (4) takes a minute).
 */
const LOAD_SAMPLES = 3;
/**
 * (1) runs this many times for ours and the bare Worker in each run (the Agents SDK once), the two
 * turn by turn together each time: the per-turn ratio is the median of its pairs, and three pairs
 * (one a run) read 1.05–1.18× for the same code in three invocations, where a pair takes seconds.
 */
const TURNS_SAMPLES = 3;

/**
 * Local workerd evicts an object about 10 s after its last request, and evicting the 200 objects
 * of a fan-out costs their Worker's process about 60–110 ms of CPU over a few seconds. Before a
 * figure is measured, the objects of what ran before are given this long to go...
 */
const EVICTION_MS = 11_000;
/** ...and then every side's Worker must have used less than this much CPU in a second. */
const QUIET_MS_PER_S = 5;

const bareDir = fileURLToPath(new URL('../workers/bare-turns/', import.meta.url));
const agentsDir = fileURLToPath(new URL('../agents-sdk/', import.meta.url));
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

type SideName = 'ours' | 'bare' | 'agents';

interface Side {
  name: SideName;
  dev: DevServer;
  processes: { worker: number; proxy: number[]; wrangler: number[] };
}

const sum = (pids: number[]) => pids.reduce((total, pid) => total + cpuMs(pid), 0);

/** User and system CPU of a process in ms (all its threads, including exited ones), in clock ticks. */
function tickCpu(pid: number): { user: number; system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: (Number(fields[11]) * 1000) / CLK_TCK, system: (Number(fields[12]) * 1000) / CLK_TCK };
}

let unusual = false;

/** One exchange; the reply must be the scripted reply for `key` (in a burst, hold one of `accept`). */
async function turn(side: Side, conversation: string, key: string, accept?: Set<string>, route: Route = 'turn'): Promise<void> {
  const replies = await sendTurn(side.dev, conversation, key, accept, route, side.name);
  // In a burst a reply may answer several joined sends: the first such reply is shown part by part.
  if (replies.length > 1 && !unusual) {
    unusual = true;
    console.log(
      `${side.name}: a burst reply of ${replies.length} parts: ${replies.map((part) => `${part.length} chars, ${accept?.has(part) ? 'a scripted reply' : JSON.stringify(part.slice(0, 60))}`).join('; ')}`,
    );
  }
}

/** The fields of `GET /meter` (storage-meter.ts's `IsolateWrites`, read over HTTP) this bench uses. */
interface MeterReading {
  objects: number;
  /** Rows written as billed. */
  billed: number;
  sqlRowsRead: number;
  bytesStored: number;
  requests: number;
}

/** What the side's objects have done so far (the storage and request meters, summed in the Worker's isolate). */
async function meterOf(side: Side): Promise<MeterReading> {
  const meter = (await (await fetch(`${side.dev.base}/meter`)).json()) as MeterReading;
  if (meter.objects === 0) throw new Error(`${side.name}: no metered object in the Worker's isolate`);
  return meter;
}

/** Pauses (or resumes) the meters of the side's isolate (storage-meter.ts `pauseMeters`). */
async function pauseMeters(side: Side, pause: boolean): Promise<void> {
  const response = await fetch(`${side.dev.base}/meter/${pause ? 'pause' : 'resume'}`, { method: 'POST' });
  if (response.status !== 204) throw new Error(`${side.name}: /meter/${pause ? 'pause' : 'resume'} answered ${response.status}`);
}

/** Ours: the workerd CPU of each fan-out's lapses, printed beside the figures (bench/README.md). */
const fanoutLapseCpu: number[] = [];

/**
 * Ours only: the backstop each of these conversations left to lapse when its queue emptied runs
 * now, right after the scenario that left it, instead of firing up to 30 s later in whichever
 * scenario runs then. Its meters (a request, no row) count in the scenario's; its CPU does not:
 * in production it is an alarm invocation, billed as a request and duration, where here it is an
 * RPC from the Worker besides. Answers that CPU (undefined for the bare object, which arms no alarm).
 */
async function lapse(side: Side, ids: string[]): Promise<number | undefined> {
  if (side.name !== 'ours') return undefined;
  const sample = await measure(side, () => lapseNow(side.dev, ids));
  return sample.cpu;
}

/** What the objects did between two readings of the meter, per turn. */
interface ObjectUse {
  rowsWritten: number;
  rowsRead: number;
  bytesStored: number;
  requests: number;
}

function objectUse(before: MeterReading, after: MeterReading, turns: number): ObjectUse {
  return {
    rowsWritten: (after.billed - before.billed) / turns,
    rowsRead: (after.sqlRowsRead - before.sqlRowsRead) / turns,
    bytesStored: (after.bytesStored - before.bytesStored) / turns,
    requests: (after.requests - before.requests) / turns,
  };
}

/** Fails unless `work` made exactly `expected` model requests; returns how many it made. */
async function modelRequests(side: Side, expected: number | undefined, work: () => Promise<void>): Promise<number> {
  const before = server.requests.length;
  await work();
  const made = server.requests.length - before;
  if (expected !== undefined && made !== expected)
    throw new Error(`${side.name}: expected ${expected} model requests, the server saw ${made}`);
  return made;
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

/**
 * Waits until the objects of the scenarios that ran before are evicted and every side's Worker is
 * quiet, so their teardown lands in no figure (it fell in whichever side's turns ran next: the
 * per-turn ratio moved by a quarter between runs so). Answers the seconds waited.
 */
async function quiesce(sides: readonly Side[]): Promise<number> {
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, EVICTION_MS));
  for (let slice = 0; slice < 30; slice++) {
    const before = sides.map((s) => cpuMs(s.processes.worker));
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    if (sides.every((s, i) => cpuMs(s.processes.worker) - before[i]! < QUIET_MS_PER_S)) break;
  }
  return (performance.now() - started) / 1000;
}

interface TurnsSample {
  /**
   * Per turn index: mean workerd CPU per turn over the side's conversations, from the start of turn
   * t to the start of turn t + 1 (what its objects did after answering turn t counts in turn t).
   */
  cpu: number[];
  /** Per turn index: mean wall time from send to reply. */
  wall: number[];
  /** Rows written per turn over turns 2–20 (turn 1 creates the conversation and its schema). */
  rows: number;
  /** All the object meters per turn over turns 2–20. */
  use: ObjectUse;
  /** Per turn: ms from just before the request is sent to the model server receiving the turn's first request. */
  firstRequest: number[];
}

/** One side's conversations of (1), turn by turn; `finish` after the last turn. */
function turnsRun(side: Side, run: number) {
  const { worker } = side.processes;
  // The Agents SDK side runs one conversation: its turns cost several times ours, and the run must fit the bench's time.
  const ids = Array.from({ length: side.name === 'agents' ? 1 : CONVERSATIONS_PER_TURN }, (_, c) => `turns-${run}-${c}`);
  /** The Worker's CPU at the start of each turn index, then once more at the end. */
  const marks: number[] = [];
  /** CPU inside the marks that is the bench's own reading of the meter, not a turn's. */
  let metering = 0;
  const wall: number[] = [];
  const firstRequest: number[] = [];
  let before: MeterReading | undefined;
  return {
    async turn(t: number): Promise<void> {
      if (t === 2) {
        // The meters after turn 1, which created the conversations: the follow-up turns' figures start here.
        const cpu = cpuMs(worker);
        before = await meterOf(side);
        metering = cpuMs(worker) - cpu;
      }
      marks.push(cpuMs(worker));
      const t0 = performance.now();
      for (const id of ids) {
        // Turns run one after another, so the first request the server sees next is this turn's.
        const index = server.requests.length;
        const sent = Date.now();
        await modelRequests(side, 2, () => turn(side, id, `${id}-t${t}`));
        firstRequest.push(server.requests[index]!.receivedAt - sent);
      }
      wall.push((performance.now() - t0) / ids.length);
    },
    mark(): void {
      marks.push(cpuMs(worker));
    },
    async finish(): Promise<TurnsSample> {
      const cpu = marks.slice(1).map((end, t) => (end - marks[t]! - (t === 0 ? metering : 0)) / ids.length);
      // Each conversation's lapse is one alarm invocation after its last turn: its meters count in the follow-up turns'.
      await lapse(side, ids);
      const use = objectUse(before!, await meterOf(side), (TURNS - 1) * ids.length);
      return { cpu, wall, rows: use.rowsWritten, use, firstRequest };
    },
  };
}

/**
 * (1) on `sides` together: turn t of every side's conversations before turn t + 1 of any, the
 * sides taking turns first, so a change in the machine's load between runs or within one hits the
 * sides whose ratio is the figure alike. (Run one after the other, one side's turns could fall in
 * a busier minute than the other's: the per-turn ratio moved by a quarter between runs so.)
 */
async function turnsScenario(sides: Side[], run: number): Promise<TurnsSample[]> {
  const runs = sides.map((side) => turnsRun(side, run));
  for (let t = 1; t <= TURNS; t++) for (const r of t % 2 === 1 ? runs : [...runs].reverse()) await r.turn(t);
  for (const r of runs) r.mark();
  const samples: TurnsSample[] = [];
  for (const r of runs) samples.push(await r.finish());
  return samples;
}

interface StreamedSample {
  sample: Sample;
  use: ObjectUse;
}

/**
 * One follow-up turn whose reply streams for SLOW_STREAM_MS (the tool call before it is instant):
 * the object waits on the model that long. One conversation per run; its first turn is not measured.
 */
async function streamedScenario(side: Side, run: number): Promise<StreamedSample> {
  const id = `streamed-${run}`;
  await turn(side, id, `${id}-first`);
  const before = await meterOf(side);
  const sample = await measure(side, async () => {
    await modelRequests(side, 2, () => turn(side, id, `${SLOW_KEY_PREFIX}${id}`));
  });
  await lapse(side, [id]);
  return { sample, use: objectUse(before, await meterOf(side), 1) };
}

async function fanoutScenario(side: Side, run: number): Promise<Sample> {
  const ids = Array.from({ length: FANOUT }, (_, c) => `fan-${run}-${c}`);
  const sample = await measure(side, async () => {
    await modelRequests(side, 2 * FANOUT, async () => {
      await Promise.all(ids.map((id) => turn(side, id, id)));
    });
  });
  const lapsed = await lapse(side, ids);
  if (lapsed !== undefined) fanoutLapseCpu.push(lapsed);
  return sample;
}

/**
 * BURST concurrent sends to one conversation (which has had one turn). Queued messages join the
 * next exchange on both sides (ours may also join them into the running response at its next
 * model call), so each reply is the scripted reply for one of the burst's keys; the model
 * requests each side made are printed.
 */
async function burstScenario(side: Side, run: number, route: Route = 'turn'): Promise<Sample & { requests: number }> {
  const id = route === 'turn' ? `burst-${run}` : `burst-${route}-${run}`;
  await turn(side, id, `${id}-first`, undefined, route);
  const keys = Array.from({ length: BURST }, (_, i) => `${id}-${i}`);
  const accept = new Set(keys.map(expectedReply));
  let requests = 0;
  const sample = await measure(side, async () => {
    requests = await modelRequests(side, undefined, async () => {
      await Promise.all(keys.map((key) => turn(side, id, key, accept, route)));
    });
  });
  await lapse(side, [id]);
  if (requests < 2) throw new Error(`${side.name}: the burst made ${requests} model requests`);
  return { ...sample, requests };
}

const burstSamples = (samples: (Sample & { requests: number })[]) =>
  samples.map((x) => `wall ${x.wall.toFixed(0)} ms, workerd ${x.cpu.toFixed(0)} ms, ${x.requests} model requests`).join('; ');
const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const ms = (value: number) => `${value.toFixed(1)} ms`;
const times = (value: number) => `${value.toFixed(2)}×`;

// ── The bill ────────────────────────────────────────────────────────────────────────────────

type Scenario = 'instant' | 'streamed';
/** Both turns are a `lookup` tool call, then the 200-chunk reply: at once, or streamed. */
const SCENARIO_LABEL: Record<Scenario, string> = {
  instant: 'instant turn',
  streamed: `${SLOW_STREAM_MS / 1000} s streamed turn`,
};
type Bills = Record<Scenario, Record<SideName, { usage: TurnUsage; bill: Bill }>>;

const medianOf = <T>(samples: T[], pick: (sample: T) => number) => median(samples.map(pick));

/**
 * Each side's turn as the price list sees it. One inbound Worker request per turn on every side
 * (the `POST /turn` that runs it). Workers CPU is all of workerd's CPU, the object's included:
 * an upper bound, since Cloudflare bills an object's time as duration, not CPU. The object is held
 * awake for the turn's wall time from send to reply (an upper bound too: it includes the Worker's
 * hop); an object idle after its turn is eligible for hibernation and billed nothing more.
 */
function billOf(turns: Record<string, TurnsSample[]>, streamed: Record<string, StreamedSample[]>): Bills {
  const bills = { instant: {}, streamed: {} } as Bills;
  for (const side of ['ours', 'bare', 'agents'] as const) {
    const follow = turns[side]!;
    const instant: TurnUsage = {
      workerRequests: 1,
      workerCpuMs: medianOf(follow, (sample) => mean(sample.cpu.slice(1))),
      objectRequests: medianOf(follow, (sample) => sample.use.requests),
      objectAwakeMs: medianOf(follow, (sample) => mean(sample.wall.slice(1))),
      rowsRead: medianOf(follow, (sample) => sample.use.rowsRead),
      rowsWritten: medianOf(follow, (sample) => sample.use.rowsWritten),
      bytesStored: medianOf(follow, (sample) => sample.use.bytesStored),
    };
    const slow = streamed[side]!;
    const streaming: TurnUsage = {
      workerRequests: 1,
      workerCpuMs: medianOf(slow, (sample) => sample.sample.cpu),
      objectRequests: medianOf(slow, (sample) => sample.use.requests),
      objectAwakeMs: medianOf(slow, (sample) => sample.sample.wall),
      rowsRead: medianOf(slow, (sample) => sample.use.rowsRead),
      rowsWritten: medianOf(slow, (sample) => sample.use.rowsWritten),
      bytesStored: medianOf(slow, (sample) => sample.use.bytesStored),
    };
    bills.instant[side] = { usage: instant, bill: billPerMillionTurns(instant) };
    bills.streamed[side] = { usage: streaming, bill: billPerMillionTurns(streaming) };
  }
  return bills;
}

const share = (bill: Bill) => {
  const { line, share: part } = dominantLine(bill);
  return `${line} (${Math.round(part * 100)}%)`;
};

/** Per scenario: each line and the total, ours against bare, the Agents SDK in the note; then the dominant line. */
function billRows(bills: Bills): BenchRow[] {
  const rows: BenchRow[] = [];
  for (const scenario of ['instant', 'streamed'] as const) {
    const { ours, bare, agents } = bills[scenario];
    const row = (figure: string, pick: (bill: Bill) => number): BenchRow => ({
      figure: `bill, ${SCENARIO_LABEL[scenario]}: ${figure}, $ per million turns`,
      ours: dollars(pick(ours.bill)),
      baseline: dollars(pick(bare.bill)),
      ratio: pick(bare.bill) === 0 ? '—' : times(pick(ours.bill) / pick(bare.bill)),
      target: '—',
      met: true,
      note: `bare Worker + DO; Agents SDK ${dollars(pick(agents.bill))}`,
    });
    for (const line of BILL_LINES) rows.push(row(line, (bill) => bill[line]));
    rows.push(row('total', billTotal));
    rows.push({
      figure: `bill, ${SCENARIO_LABEL[scenario]}: the line that dominates`,
      ours: share(ours.bill),
      baseline: share(bare.bill),
      ratio: '—',
      target: '—',
      met: true,
      note: `bare Worker + DO; Agents SDK ${share(agents.bill)}`,
    });
  }
  return rows;
}

/** The meters each bill was priced from, and the bill with all three sides side by side. */
function printBills(bills: Bills): void {
  for (const scenario of ['instant', 'streamed'] as const) {
    console.log(
      `\nThe bill, ${SCENARIO_LABEL[scenario]} (a tool call, then the 200-chunk reply): a turn's meters, then $ per million turns`,
    );
    const sides = ['ours', 'bare', 'agents'] as const;
    console.log(`| meter | ${sides.join(' | ')} |\n| --- | --- | --- | --- |`);
    for (const meter of Object.keys(bills[scenario].ours.usage) as (keyof TurnUsage)[]) {
      console.log(`| ${meter} | ${sides.map((side) => bills[scenario][side].usage[meter].toFixed(1)).join(' | ')} |`);
    }
    for (const line of BILL_LINES)
      console.log(`| ${line} | ${sides.map((side) => dollars(bills[scenario][side].bill[line])).join(' | ')} |`);
    console.log(`| **total** | ${sides.map((side) => `**${dollars(billTotal(bills[scenario][side].bill))}**`).join(' | ')} |`);
    console.log(`| dominates | ${sides.map((side) => share(bills[scenario][side].bill)).join(' | ')} |`);
  }
}

const installed = spawnSync(process.execPath, [fileURLToPath(new URL('../agents-sdk/ensure-installed.mjs', import.meta.url))], {
  stdio: 'inherit',
});
if (installed.status !== 0) process.exit(installed.status ?? 1);

// Every side's workerd runs its Worker alone, as on Cloudflare (wrangler-processes.ts).
withoutLocalTraceCollector();
const server = await startSideBySideServer();
const project = templateCopy('bench-wrangler-cpu');
const sides: Side[] = [];
try {
  writeBenchProject(project);
  buildProject(project);
  const start = async (name: SideName, dev: Promise<DevServer>) => {
    const started = await dev;
    sides.push({ name, dev: started, processes: processesOf(started.pid) });
  };
  await start('ours', startWranglerDev(project, { FLUE_SCRIPTED_MODEL_URL: server.url }));
  // Every side starts with no objects: the baselines' state goes beside the bench project (removed
  // at the end), not in their folders' `.wrangler/state`, where the conversations of an earlier run,
  // which use the same names, would carry on with their histories.
  const fresh = (name: string) => ['--persist-to', path.join(project, `.state-${name}`)];
  await start('bare', startWranglerDev(bareDir, { MODEL_URL: server.url }, 90_000, 'wrangler.jsonc', fresh('bare')));
  await start('agents', startWranglerDev(agentsDir, { MODEL_URL: server.url }, 90_000, 'wrangler.jsonc', fresh('agents')));
  const side = (name: SideName) => sides.find((s) => s.name === name)!;
  const pair = [side('ours'), side('bare')];

  // Warm-up: module load, the first model call and JIT of every path belong to no figure. Each
  // scenario runs at full size, as it is measured, and is discarded (the fan-out and the burst
  // with meters paused; the burst WARMUP_BURSTS times): with 3 turns on one conversation, or 20
  // conversations, as their warm-up, each run's first turns still cost more on our side, whose
  // code V8 had not finished optimizing (bench/README.md, the warm-up).
  for (const s of sides) {
    await turnsScenario([s], -1);
    if (s.name === 'agents') continue;
    await pauseMeters(s, true);
    await fanoutScenario(s, -1);
    for (let k = 1; k <= WARMUP_BURSTS; k++) await burstScenario(s, -k);
    if (s.name === 'bare') for (let k = 1; k <= WARMUP_BURSTS; k++) await burstScenario(s, -k, 'receipt');
    await pauseMeters(s, false);
  }

  const turns: Record<string, TurnsSample[]> = { ours: [], bare: [], agents: [] };
  const streamed: Record<string, StreamedSample[]> = { ours: [], bare: [], agents: [] };
  const fan: Record<string, Sample[]> = { ours: [], bare: [] };
  // `receipt`: the bare Worker's bursts sent as `read(await dispatch(text))` is (Route).
  const burst: Record<string, (Sample & { requests: number })[]> = { ours: [], bare: [], receipt: [] };
  const bursts = [
    { name: 'ours', side: side('ours'), route: 'turn' },
    { name: 'bare', side: side('bare'), route: 'turn' },
    { name: 'receipt', side: side('bare'), route: 'receipt' },
  ] as const;
  /** Seconds waited for quiet before each measured scenario (`quiesce`). */
  const waited: number[] = [];
  const ticksBefore = sides.map((s) => ({ ticks: tickCpu(s.processes.worker), ns: cpuMs(s.processes.worker) }));
  for (let run = 0; run < RUNS; run++) {
    const rotate = <T>(list: T[]) => [...list.slice(run % list.length), ...list.slice(0, run % list.length)];
    waited.push(await quiesce(sides));
    // Ours and the bare Worker turn by turn together (their ratio is the figure), the Agents SDK on its own.
    for (let k = 0; k < TURNS_SAMPLES; k++) {
      const together = k % 2 === 0 ? rotate(pair) : rotate(pair).reverse();
      (await turnsScenario(together, run * TURNS_SAMPLES + k)).forEach((sample, i) => turns[together[i]!.name]!.push(sample));
    }
    turns.agents!.push((await turnsScenario([side('agents')], run))[0]!);
    for (const s of rotate(sides)) streamed[s.name]!.push(await streamedScenario(s, run));
    // No figure of these two reads a meter: they run with every meter paused (CPU without the bench's counting).
    await Promise.all(pair.map((s) => pauseMeters(s, true)));
    for (let k = 0; k < LOAD_SAMPLES; k++) {
      const sample = run * LOAD_SAMPLES + k;
      const order = k % 2 === 0 ? rotate(pair) : rotate(pair).reverse();
      for (const s of order) fan[s.name]!.push(await fanoutScenario(s, sample));
      waited.push(await quiesce(sides));
      for (const b of k % 2 === 0 ? rotate([...bursts]) : rotate([...bursts]).reverse())
        burst[b.name]!.push(await burstScenario(b.side, sample, b.route));
    }
    await Promise.all(pair.map((s) => pauseMeters(s, false)));
  }

  console.log(
    `waited for evictions and quiet before the turns and between fan-outs and bursts: ${waited.map((w) => w.toFixed(0)).join(', ')} s`,
  );
  console.log(
    `ours: the ${FANOUT} lapses after each fan-out, outside its figure: ${fanoutLapseCpu.map((cpu) => cpu.toFixed(0)).join(', ')} ms of workerd CPU (through the bench's /lapse RPC)`,
  );
  sides.forEach((s, i) => {
    const { ticks, ns } = ticksBefore[i]!;
    const now = tickCpu(s.processes.worker);
    const user = now.user - ticks.user;
    const system = now.system - ticks.system;
    // Kernel time (local SQLite's files, the sockets, the timers) apart from the Worker's own: were it
    // one side's difference, a count of instructions (user space only) would not show it.
    console.log(
      `${s.name}: Worker workerd CPU over all runs: ${(user + system).toFixed(0)} ms by /proc stat (user ${user.toFixed(0)}, system ${system.toFixed(0)}), ${(cpuMs(s.processes.worker) - ns).toFixed(0)} ms by thread schedstat`,
    );
  });
  const perTurn = (name: string) => median(turns[name]!.map((sample) => mean(sample.cpu)));
  const late = (name: string) => median(turns[name]!.map((sample) => mean(sample.cpu.slice(15))));
  const first = (name: string) => median(turns[name]!.map((sample) => sample.cpu[0]!));
  const rowsPerTurn = (name: string) => median(turns[name]!.map((sample) => sample.rows));
  // Turn 1 of each conversation creates it; the figure is a follow-up turn's.
  const firstRequest = (name: string) =>
    median(turns[name]!.flatMap((sample) => sample.firstRequest.slice(name === 'agents' ? 1 : CONVERSATIONS_PER_TURN)));
  const figure = (samples: Record<string, Sample[]>, name: string, key: keyof Sample) =>
    median(samples[name]!.map((sample) => sample[key]));

  // Each ratio is the median of the pairs' ratios: ours' sample i and the bare Worker's sample i
  // ran side by side (turn by turn, or one right after the other), so a busier minute of the
  // machine is in both halves of a pair. The sides' own medians (the rows' ms figures) can pair a
  // loaded run of one with a quiet run of the other: in one run their ratio read 1.25× where the
  // three pairs read 1.25×, 1.05× and 1.05×. The note gives that ratio too.
  const paired = (ours: number[], bare: number[]) => median(ours.map((value, i) => value / bare[i]!));
  const sideBySide = (samples: Record<string, Sample[]>, key: keyof Sample, baseline = 'bare') =>
    paired(
      samples.ours!.map((sample) => sample[key]),
      samples[baseline]!.map((sample) => sample[key]),
    );
  const ofMedians = (ours: number, bare: number) => `the sides' medians: ${times(ours / bare)}`;
  const cpuRatio = paired(
    turns.ours!.map((sample) => mean(sample.cpu)),
    turns.bare!.map((sample) => mean(sample.cpu)),
  );
  const flat = late('ours') / first('ours');
  const fanWall = sideBySide(fan, 'wall');
  const fanCpu = sideBySide(fan, 'cpu');
  const burstWall = sideBySide(burst, 'wall');
  const burstCpu = sideBySide(burst, 'cpu');
  const burstReceiptCpu = sideBySide(burst, 'cpu', 'receipt');
  const exchanges = (name: string) => burst[name]!.map((sample) => sample.requests).join(', ');
  const rows: BenchRow[] = [
    {
      figure: '(1) workerd CPU per turn, 20-turn conversations',
      ours: ms(perTurn('ours')),
      baseline: ms(perTurn('bare')),
      ratio: times(cpuRatio),
      target: '≤ 1.15×',
      met: cpuRatio <= 1.15,
      note: `bare Worker + DO, pi-ai alone; ratio: median of the ${RUNS * TURNS_SAMPLES} pairs' ratios; ${ofMedians(perTurn('ours'), perTurn('bare'))}`,
    },
    {
      figure: '(1) flat: workerd CPU of turns 16–20 vs turn 1',
      ours: ms(late('ours')),
      baseline: ms(first('ours')),
      ratio: times(flat),
      target: '≤ 1.2×',
      met: flat <= 1.2,
      note: `baseline: our own turn 1; bare ${times(late('bare') / first('bare'))}`,
    },
    {
      figure: `(2) ${FANOUT} one-turn conversations at once, wall`,
      ours: ms(figure(fan, 'ours', 'wall')),
      baseline: ms(figure(fan, 'bare', 'wall')),
      ratio: times(fanWall),
      target: '≤ 1.5×',
      met: fanWall <= 1.5,
    },
    {
      figure: `(2) ${FANOUT} one-turn conversations at once, workerd CPU`,
      ours: ms(figure(fan, 'ours', 'cpu')),
      baseline: ms(figure(fan, 'bare', 'cpu')),
      ratio: times(fanCpu),
      target: '≤ 1.2×',
      met: fanCpu <= 1.2,
      note: `ratio: median of the pairs' ratios; ${ofMedians(figure(fan, 'ours', 'cpu'), figure(fan, 'bare', 'cpu'))}`,
    },
    {
      figure: `(3) ${BURST} concurrent sends to one conversation, wall`,
      ours: ms(figure(burst, 'ours', 'wall')),
      baseline: ms(figure(burst, 'bare', 'wall')),
      ratio: times(burstWall),
      target: '≤ 1.5×',
      met: burstWall <= 1.5,
      note: `bare DO queue: admit in SQL, join the next exchange; model requests per burst: ours ${exchanges('ours')}, bare ${exchanges('bare')}`,
    },
    {
      figure: `(3) ${BURST} concurrent sends to one conversation, workerd CPU`,
      ours: ms(figure(burst, 'ours', 'cpu')),
      baseline: ms(figure(burst, 'bare', 'cpu')),
      ratio: times(burstCpu),
      target: '≤ 1.2×',
      met: burstCpu <= 1.2,
      note: `ratio: median of the pairs' ratios; ${ofMedians(figure(burst, 'ours', 'cpu'), figure(burst, 'bare', 'cpu'))}`,
    },
    {
      figure: `(3) ${BURST} concurrent sends to one conversation, workerd CPU, against the bare object with a receipt`,
      ours: ms(figure(burst, 'ours', 'cpu')),
      baseline: ms(figure(burst, 'receipt', 'cpu')),
      ratio: times(burstReceiptCpu),
      target: '≤ 1.2×',
      met: burstReceiptCpu <= 1.2,
      note: `the bare object answering read(await dispatch(text))'s two calls: admit for a receipt, then the reply by it; model requests per burst ${exchanges('receipt')}; ${ofMedians(figure(burst, 'ours', 'cpu'), figure(burst, 'receipt', 'cpu'))}`,
    },
  ];
  const vsAgents = (label: string, ours: number, theirs: number, format: (value: number) => string): BenchRow => ({
    figure: label,
    ours: format(ours),
    baseline: format(theirs),
    ratio: times(ours / theirs),
    target: '< 1× (ahead)',
    met: ours < theirs,
    note: 'Agents SDK 0.32 + ai-chat 0.12 + AI SDK 7',
  });
  const agentsRows: BenchRow[] = [
    vsAgents(
      'DO rows written per follow-up turn (SQL rows + setAlarm + KV writes)',
      rowsPerTurn('ours'),
      rowsPerTurn('agents'),
      (value) => `${value.toFixed(1)} rows`,
    ),
    vsAgents('workerd CPU per turn, 20-turn conversations', perTurn('ours'), perTurn('agents'), ms),
    vsAgents('send → first model request, follow-up turn', firstRequest('ours'), firstRequest('agents'), ms),
  ];
  const bills = billOf(turns, streamed);
  saveRows(
    'wrangler-dev-cpu',
    `wrangler dev, workerd process CPU from /proc, median of ${RUNS} runs ((1) for ours and bare: of ${RUNS * TURNS_SAMPLES}; (2) and (3): of ${RUNS * LOAD_SAMPLES}); ratios: the median of the side-by-side pairs' ratios`,
    rows,
  );
  saveRows('agents-sdk', `the same one-tool agent on the Cloudflare Agents SDK, wrangler dev, median of ${RUNS} runs`, agentsRows);
  saveRows(
    'bill',
    `dollars per million turns on Cloudflare's price list (bench/pricing.ts), from the meters of (1) and (4), median of ${RUNS} runs`,
    billRows(bills),
  );
  printBills(bills);
  console.log(
    `\nload average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  for (const s of sides) {
    const name = s.name;
    console.log(
      `${name}: CPU per turn by run (mean of the 20 turns, ms): ${turns[name]!.map((sample) => mean(sample.cpu).toFixed(1)).join(', ')}`,
    );
    console.log(
      `${name}: per-turn CPU series (median over runs, ms): ${Array.from({ length: TURNS }, (_, t) => median(turns[name]!.map((sample) => sample.cpu[t]!)).toFixed(1)).join(' ')}`,
    );
    console.log(
      `${name}: rows per follow-up turn by run: ${turns[name]!.map((sample) => sample.rows.toFixed(2)).join(', ')}; send → first model request, turn 1: ${median(turns[name]!.flatMap((sample) => sample.firstRequest.slice(0, name === 'agents' ? 1 : CONVERSATIONS_PER_TURN)))} ms, follow-ups: ${firstRequest(name)} ms`,
    );
    if (name === 'agents') continue;
    console.log(
      `${name}: fan-out samples: ${fan[name]!.map((x) => `wall ${x.wall.toFixed(0)} ms, workerd ${x.cpu.toFixed(0)} ms, proxy workerd ${x.proxy.toFixed(0)} ms, wrangler node ${x.wrangler.toFixed(0)} ms, bench process (model server + client) ${x.bench.toFixed(0)} ms`).join('; ')}`,
    );
    console.log(`${name}: burst samples: ${burstSamples(burst[name]!)}`);
  }
  console.log(`bare, with a receipt: burst samples: ${burstSamples(burst.receipt!)}`);
  for (const row of [...rows, ...agentsRows])
    console.log(
      `${row.figure}: ours ${row.ours}, baseline ${row.baseline}, ${row.ratio} (target ${row.target}) ${row.met ? 'met' : 'MISSED'}`,
    );
} finally {
  for (const s of sides) await s.dev.stop();
  await server.close();
  removeDir(project);
}
