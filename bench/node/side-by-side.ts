/**
 * Side by side on Node: our runtime, the published original (@flue/runtime 2.1.0, installed in
 * bench/original/) and the floor (pi-ai 1.6.0's streaming client alone) doing the same work
 * against the same scripted model server (issue 7).
 *
 *   npm run bench:original              # BENCH_RUNS=5: about 2.5 min on 2 quiet cores, up to 5 under load
 *   BENCH_RUNS=3 npm run bench:original
 *
 * Scenarios (each one a fresh child process per runtime and run, see side-by-side-child.ts):
 *   (a) turns:  one conversation of 20 turns; each turn one tool call and a streamed 200-chunk reply
 *   (b) fanout: 200 one-turn conversations, 8 at a time
 *   (c) cold:   spawn a process and time until its first reply has settled
 *
 * Also ours with one `observe()` subscriber of every runtime event, on (a) only: what observing
 * costs per turn (unobserved, no event is built at all).
 *
 * This process runs the model server and the clock; it does nothing else while a child runs, and
 * its CPU and memory are not counted in the children's figures.
 */
import { spawnSync } from 'node:child_process';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { type BenchRow, markdownTable, median, saveRows } from '../results.ts';
import { startSideBySideServer } from './side-by-side-server.ts';
import { type ChildOutcome, runSideBySideChild } from './side-by-side-spawn.ts';
import { FANOUT_CONCURRENCY, FANOUT_CONVERSATIONS, TEXT_CHUNKS, TURNS, WARMUP_TURNS } from './side-by-side-script.ts';

const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 5));
const RUNTIMES = ['ours', 'original', 'floor', 'observed'] as const;
/** The three runtimes compared everywhere; `observed` (ours with one observer of every event) runs the 20-turn conversation only. */
const COMPARED = RUNTIMES.filter((runtime) => runtime !== 'observed');
const SCENARIOS = ['cold', 'turns', 'fanout'] as const;
type RuntimeName = (typeof RUNTIMES)[number];
type Scenario = (typeof SCENARIOS)[number];

const CHILD = fileURLToPath(new URL('./side-by-side-child.ts', import.meta.url));
const ENSURE_ORIGINAL = fileURLToPath(new URL('../original/ensure-installed.mjs', import.meta.url));
/** Model requests one child must make: two per exchange (tool call, then reply), warm-up included. */
const EXPECTED_REQUESTS: Record<Scenario, number> = {
  cold: 2,
  turns: 2 * (WARMUP_TURNS + TURNS),
  fanout: 2 * (WARMUP_TURNS + FANOUT_CONVERSATIONS),
};

interface TurnsSample {
  /** Events one observer received per measured turn (the `observed` runtime only). */
  eventsPerTurn: number;
  wallMs: number[];
  cpuMs: number[];
  peakRssMiB: number;
}
interface FanoutSample {
  wallMs: number;
  cpuMs: number;
  peakRssMiB: number;
}
interface ColdSample {
  /** The parent's clock: spawn → the child's `@@settled` line. */
  settledMs: number;
  /** The child's own clock: process start → runtime loaded and started, then the one exchange. */
  loadedMs: number;
  exchangeMs: number;
}

const installed = spawnSync(process.execPath, [ENSURE_ORIGINAL], { stdio: 'inherit' });
if (installed.status !== 0) process.exit(installed.status ?? 1);

const server = await startSideBySideServer();

// Children must not inherit a scripted-model redirect or credentials that would change what they do.
const childEnv: NodeJS.ProcessEnv = {};
for (const [name, value] of Object.entries(process.env)) {
  if (!name.startsWith('FLUE_') && !/_API_KEY$/.test(name)) childEnv[name] = value;
}

async function runChild(runtime: RuntimeName, scenario: Scenario): Promise<ChildOutcome> {
  server.reset();
  const outcome = await runSideBySideChild(CHILD, [runtime, scenario, server.url], `${runtime} ${scenario}`, childEnv);
  const requests = server.requests.length;
  if (requests !== EXPECTED_REQUESTS[scenario]) {
    throw new Error(`${runtime} ${scenario}: ${requests} model requests, expected ${EXPECTED_REQUESTS[scenario]}`);
  }
  return outcome;
}

const samples = {
  cold: new Map<RuntimeName, ColdSample[]>(),
  turns: new Map<RuntimeName, TurnsSample[]>(),
  fanout: new Map<RuntimeName, FanoutSample[]>(),
};
for (const runtime of RUNTIMES) {
  samples.cold.set(runtime, []);
  samples.turns.set(runtime, []);
  samples.fanout.set(runtime, []);
}

const benchStarted = performance.now();
console.error(
  `[bench] side by side: ${RUNS} runs × ${SCENARIOS.length} scenarios × ${RUNTIMES.length} runtimes, model server at ${server.url}; ` +
    `load average ${loadavg()
      .map((v) => v.toFixed(1))
      .join(' ')} on ${availableParallelism()} cores`,
);
try {
  for (let run = 0; run < RUNS; run++) {
    // Rotate the order each run, so no runtime always goes first (or right after the heavy one).
    const order = RUNTIMES.map((_, i) => RUNTIMES[(i + run) % RUNTIMES.length]!);
    for (const scenario of SCENARIOS) {
      for (const runtime of order) {
        if (runtime === 'observed' && scenario !== 'turns') continue;
        const outcome = await runChild(runtime, scenario);
        if (scenario === 'cold') {
          const phases = outcome.result as Omit<ColdSample, 'settledMs'>;
          samples.cold.get(runtime)!.push({ settledMs: outcome.settledMs!, ...phases });
        } else if (scenario === 'turns') samples.turns.get(runtime)!.push(outcome.result as unknown as TurnsSample);
        else samples.fanout.get(runtime)!.push(outcome.result as unknown as FanoutSample);
      }
    }
    console.error(`[bench] run ${run + 1}/${RUNS} done (${((performance.now() - benchStarted) / 1000).toFixed(0)} s)`);
  }
} finally {
  await server.close();
}

// ---------------------------------------------------------------------------------------------
// Figures: one value per run first, then the median over runs.

const mean = (values: number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;
const TAIL = [15, 20] as const; // turns 16–20, zero-based slice

const METRICS = {
  wallPerTurn: (r: RuntimeName) => samples.turns.get(r)!.map((sample) => mean(sample.wallMs)),
  cpuPerTurn: (r: RuntimeName) => samples.turns.get(r)!.map((sample) => mean(sample.cpuMs)),
  turn1: (r: RuntimeName) => samples.turns.get(r)!.map((sample) => sample.wallMs[0]!),
  turns16to20: (r: RuntimeName) => samples.turns.get(r)!.map((sample) => mean(sample.wallMs.slice(...TAIL))),
  cpuTurn1: (r: RuntimeName) => samples.turns.get(r)!.map((sample) => sample.cpuMs[0]!),
  cpuTurns16to20: (r: RuntimeName) => samples.turns.get(r)!.map((sample) => mean(sample.cpuMs.slice(...TAIL))),
  turnsRss: (r: RuntimeName) => samples.turns.get(r)!.map((sample) => sample.peakRssMiB),
  fanoutWall: (r: RuntimeName) => samples.fanout.get(r)!.map((sample) => sample.wallMs),
  fanoutCpu: (r: RuntimeName) => samples.fanout.get(r)!.map((sample) => sample.cpuMs),
  fanoutRss: (r: RuntimeName) => samples.fanout.get(r)!.map((sample) => sample.peakRssMiB),
  cold: (r: RuntimeName) => samples.cold.get(r)!.map((sample) => sample.settledMs),
} satisfies Record<string, (runtime: RuntimeName) => number[]>;
type Metric = keyof typeof METRICS;

const value = (runtime: RuntimeName, metric: Metric): number => median(METRICS[metric](runtime));
/** The median of per-run ratios: each run's `a` against the same run's `b`, a cross-check on a noisy machine. */
const pairedRatio = (a: RuntimeName, b: RuntimeName, metric: Metric): number => {
  const [as, bs] = [METRICS[metric](a), METRICS[metric](b)];
  return median(as.map((sample, run) => sample / bs[run]!));
};
/** Median over runs of each turn's time, turn 1 first. */
const perTurn = (runtime: RuntimeName, field: 'wallMs' | 'cpuMs'): number[] =>
  Array.from({ length: TURNS }, (_, turn) => median(samples.turns.get(runtime)!.map((sample) => sample[field][turn]!)));

const ms = (v: number): string => (v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${v.toFixed(v < 10 ? 1 : 0)} ms`);
const mib = (v: number): string => `${v.toFixed(0)} MiB`;
const times = (v: number): string => `${v.toFixed(2)}×`;

interface Figure {
  figure: string;
  metric: Metric;
  format: (value: number) => string;
  target: number;
}

const FIGURES: Figure[] = [
  { figure: `(a) wall per turn, ${TURNS}-turn conversation`, metric: 'wallPerTurn', format: ms, target: 1.5 },
  { figure: `(a) CPU per turn, ${TURNS}-turn conversation`, metric: 'cpuPerTurn', format: ms, target: 1.5 },
  { figure: '(a) peak RSS', metric: 'turnsRss', format: mib, target: 1.3 },
  {
    figure: `(b) wall, ${FANOUT_CONVERSATIONS} one-turn conversations ${FANOUT_CONCURRENCY} at a time`,
    metric: 'fanoutWall',
    format: ms,
    target: 1.5,
  },
  { figure: `(b) CPU, ${FANOUT_CONVERSATIONS} conversations`, metric: 'fanoutCpu', format: ms, target: 1.15 },
  { figure: '(b) peak RSS', metric: 'fanoutRss', format: mib, target: 1.3 },
  { figure: '(c) cold start: spawn → first settled reply', metric: 'cold', format: ms, target: 1.1 },
];

const rows: BenchRow[] = FIGURES.map(({ figure, metric, format, target }) => {
  const ratio = value('ours', metric) / value('floor', metric);
  return {
    figure,
    ours: format(value('ours', metric)),
    baseline: format(value('floor', metric)),
    ratio: times(ratio),
    target: `≤ ${target}×`,
    met: ratio <= target,
    note: `floor: pi-ai alone; original 2.1.0: ${format(value('original', metric))} = ${times(value('original', metric) / value('floor', metric))}`,
  };
});
const flatness = (runtime: RuntimeName, late: Metric, first: Metric): string =>
  `${ms(value(runtime, late))} vs ${ms(value(runtime, first))} = ${times(value(runtime, late) / value(runtime, first))}`;
const flat = value('ours', 'turns16to20') / value('ours', 'turn1');
rows.splice(1, 0, {
  figure: '(a) flat: mean of turns 16–20 vs turn 1 (wall)',
  ours: ms(value('ours', 'turns16to20')),
  baseline: ms(value('ours', 'turn1')),
  ratio: times(flat),
  target: '≤ 1.2×',
  met: flat <= 1.2,
  note: `baseline: our own turn 1; floor ${flatness('floor', 'turns16to20', 'turn1')}; original ${flatness('original', 'turns16to20', 'turn1')}`,
});

const method =
  `Node ${process.versions.node}, ${RUNS === 1 ? 'one run' : `median of ${RUNS} runs`}; each runtime and scenario in a fresh child process; ` +
  `scripted Anthropic Messages model server (instant, ${TEXT_CHUNKS}-chunk replies) in the parent process; ` +
  'baseline = the floor, pi-ai 1.6.0 streaming client alone; the original is the published @flue/runtime 2.1.0';
saveRows('node-side-by-side', method, rows);

// The three-way table for the README: ours, the original and the floor side by side.
console.log(`\nSide by side on Node (${method})\n`);
console.log('| figure | ours | original 2.1.0 | floor (pi-ai alone) | ours / floor | original / floor | target | met? |');
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
for (const { figure, metric, format, target } of FIGURES) {
  const ratio = value('ours', metric) / value('floor', metric);
  console.log(
    `| ${figure} | ${format(value('ours', metric))} | ${format(value('original', metric))} | ${format(value('floor', metric))} | ` +
      `${times(ratio)} | ${times(value('original', metric) / value('floor', metric))} | ≤ ${target}× | ${ratio <= target ? 'yes' : '**no**'} |`,
  );
}
console.log(
  `| (a) turns 16–20 vs turn 1, wall | ${flatness('ours', 'turns16to20', 'turn1')} | ${flatness('original', 'turns16to20', 'turn1')} | ` +
    `${flatness('floor', 'turns16to20', 'turn1')} | | | ≤ 1.2× (ours) | ${flat <= 1.2 ? 'yes' : '**no**'} |`,
);
console.log(
  `| (a) turns 16–20 vs turn 1, CPU | ${flatness('ours', 'cpuTurns16to20', 'cpuTurn1')} | ${flatness('original', 'cpuTurns16to20', 'cpuTurn1')} | ` +
    `${flatness('floor', 'cpuTurns16to20', 'cpuTurn1')} | | | (cross-check) | |`,
);

console.log('\nAs saved for `npm run bench` (bench/.results/):\n');
console.log(markdownTable(rows));

console.log('\nCross-check, median of per-run ratios (each run against the same run of the floor):');
for (const { figure, metric } of FIGURES) {
  console.log(
    `  ${figure}: ours ${times(pairedRatio('ours', 'floor', metric))}, original ${times(pairedRatio('original', 'floor', metric))}`,
  );
}
for (const field of ['wallMs', 'cpuMs'] as const) {
  console.log(
    `\n${field === 'wallMs' ? 'Wall' : 'CPU'} time of each turn of the ${TURNS}-turn conversation (median over runs, ms, turn 1 → ${TURNS}):`,
  );
  for (const runtime of COMPARED)
    console.log(
      `  ${runtime.padEnd(8)} ${perTurn(runtime, field)
        .map((v) => v.toFixed(0))
        .join(' ')}`,
    );
}
console.log("\n(c) where the cold start goes, on the child's clock (median over runs, ms):");
for (const runtime of COMPARED) {
  const phases = samples.cold.get(runtime)!;
  console.log(
    `  ${runtime.padEnd(8)} process start → imports done and runtime started ${median(phases.map((p) => p.loadedMs)).toFixed(0)}, ` +
      `then the first exchange until settled ${median(phases.map((p) => p.exchangeMs)).toFixed(0)}`,
  );
}
// Observing costs what the subscriber does plus building each event; unobserved, nothing is built.
const observedCpu = value('observed', 'cpuPerTurn');
const unobservedCpu = value('ours', 'cpuPerTurn');
const eventsPerTurn = median(samples.turns.get('observed')!.map((sample) => sample.eventsPerTurn));
console.log(
  `\nOne observe() subscriber of every event (${eventsPerTurn.toFixed(0)} events per turn): CPU per turn ${ms(observedCpu)} ` +
    `vs ${ms(unobservedCpu)} unobserved = ${ms(observedCpu - unobservedCpu)} per turn (${times(pairedRatio('observed', 'ours', 'cpuPerTurn'))}, median of per-run ratios); ` +
    `wall per turn ${ms(value('observed', 'wallPerTurn'))} vs ${ms(value('ours', 'wallPerTurn'))}`,
);

console.log('\nRaw samples per run:');
for (const runtime of COMPARED) {
  console.log(
    `  ${runtime.padEnd(8)} (a) wall/turn ${METRICS.wallPerTurn(runtime)
      .map((v) => v.toFixed(1))
      .join(', ')} ms; ` +
      `(b) ${METRICS.fanoutWall(runtime)
        .map((v) => (v / 1000).toFixed(2))
        .join(', ')} s; ` +
      `(c) ${METRICS.cold(runtime)
        .map((v) => v.toFixed(0))
        .join(', ')} ms`,
  );
}
console.log(
  `\n[bench] side by side took ${((performance.now() - benchStarted) / 1000).toFixed(0)} s; ` +
    `load average ${loadavg()
      .map((v) => v.toFixed(1))
      .join(' ')} on ${availableParallelism()} cores (other work on the machine inflates wall times)`,
);
