/**
 * Worker startup time: the CPU a Worker spends evaluating its global scope before it can serve,
 * which Cloudflare caps at 1 second per upload (Workers limits, "Worker startup time"; 400 ms
 * before October 2025).
 *
 *   npm run bench -- startup
 *
 * Measured the way the platform's own tool does: `wrangler check startup` builds the Worker, runs
 * it in local workerd under the V8 sampling profiler and reports the startup phase's active CPU
 * time (non-idle samples). Ours is the one-agent template built by `flue build` without
 * configuration (anthropic inferred); the baseline is a Worker holding only the same pi-ai
 * provider (provider-alone.ts). Rounds alternate between the two so machine load hits both; the
 * figure is the median of the rounds. Offline: metrics and the cf fetch are switched off.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { build } from '../../src/build/build.ts';
import { packageRoot } from '../../src/build/package-root.ts';
import { offlineEnv, removeDir, tempProject, templateCopy } from '../../src/build/test-project.ts';
import { type BenchRow, median, saveRows } from '../results.ts';
import { buildProviderAlone } from './provider-alone.ts';

const PROVIDER = 'anthropic';
const ROUNDS = Number(process.env.BENCH_STARTUP_ROUNDS ?? 9);
const TARGET_RATIO = 1.15;
const LIMIT_MS = 1000;
// BENCH_STARTUP_MINIFY=1: both Workers minified (`flue build --minify`), to see what parsing costs.
const MINIFY = process.env.BENCH_STARTUP_MINIFY === '1';

interface Startup {
  activeMs: number;
  /** Non-idle samples of the startup profile: under load a descheduled isolate stretches one sample's
   * time (wrangler's Active sums them), while the count of samples moves less. */
  samples: number;
  bundleKiB: string;
  /** The startup CPU profile wrangler wrote. */
  profile: string;
}

/**
 * Self time of the non-idle samples per bundled module: a sample's line in worker.js belongs to
 * the module whose `// path` comment (esbuild, unminified) precedes it. `(program)` is V8 parsing
 * and compiling the script; `(garbage collector)` and runtime internals keep their own names.
 */
function selfTimeByModule(profilePath: string, workerJs: string, into: Map<string, number>): void {
  const starts: [number, string][] = [];
  workerJs.split('\n').forEach((line, i) => {
    const match = /^\/\/ (\S+\.[cm]?[jt]s)$/.exec(line);
    if (match !== null) starts.push([i, match[1]!.replace(/^(?:\.\.\/)+/, '')]);
  });
  const moduleAt = (line: number): string => {
    let lo = 0;
    let hi = starts.length - 1;
    let found = '(bundle prelude)';
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid]![0] <= line) {
        found = starts[mid]![1];
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  };
  const profile = JSON.parse(readFileSync(profilePath, 'utf8')) as {
    nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
    samples: number[];
    timeDeltas: number[];
  };
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  profile.samples.forEach((id, i) => {
    const frame = nodes.get(id)!.callFrame;
    if (frame.functionName === '(idle)') return;
    const key = frame.url.endsWith('worker.js') ? moduleAt(frame.lineNumber) : frame.url === '' ? frame.functionName : frame.url;
    into.set(key, (into.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
}

/** One `wrangler check startup` in `dir` with `config`; its reported active startup CPU. */
function checkStartup(dir: string, config: string): Startup {
  const wrangler = path.join(packageRoot(), 'node_modules', 'wrangler', 'bin', 'wrangler.js');
  const outfile = path.join(dir, '.wrangler', 'startup.cpuprofile');
  const run = spawnSync(process.execPath, [wrangler, 'check', 'startup', '-c', config, '--outfile', outfile], {
    cwd: dir,
    env: offlineEnv(),
    encoding: 'utf8',
    timeout: 180_000,
  });
  const out = `${run.stdout}\n${run.stderr}`;
  const active = /Active:\s*([\d.]+)\s*ms/.exec(out);
  if (run.status !== 0 || active === null) throw new Error(`wrangler check startup failed in ${dir}:\n${out}`);
  return {
    activeMs: Number(active[1]),
    samples: nonIdleSamples(outfile),
    bundleKiB: /Bundle:\s*([\d.]+ KiB)/.exec(out)?.[1] ?? '?',
    profile: outfile,
  };
}

function nonIdleSamples(profilePath: string): number {
  const profile = JSON.parse(readFileSync(profilePath, 'utf8')) as {
    nodes: { id: number; callFrame: { functionName: string } }[];
    samples: number[];
  };
  const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
  return profile.samples.filter((id) => !idle.has(id)).length;
}

const ours = templateCopy('bench-startup');
const alone = tempProject('bench-startup-alone');
try {
  await build({ root: ours, minify: MINIFY, log: () => {} });
  const js = (await buildProviderAlone(PROVIDER, MINIFY)).outputFiles[0]!.contents;
  mkdirSync(path.join(alone, 'dist'), { recursive: true });
  writeFileSync(path.join(alone, 'dist', 'worker.js'), js);
  // The template's compatibility settings, so both run under the same flags.
  const template = readFileSync(path.join(ours, '.flue.wrangler.json'), 'utf8');
  const { compatibility_date, compatibility_flags } = JSON.parse(template) as { compatibility_date: string; compatibility_flags: string[] };
  writeFileSync(
    path.join(alone, 'wrangler.json'),
    // no_bundle like the generated config: wrangler runs the esbuild output as it is.
    JSON.stringify({ name: 'provider-alone', main: 'dist/worker.js', no_bundle: true, compatibility_date, compatibility_flags }, null, 2),
  );

  const oursJs = readFileSync(path.join(ours, 'dist', 'worker.js'), 'utf8');
  const aloneJs = readFileSync(path.join(alone, 'dist', 'worker.js'), 'utf8');
  const oursModules = new Map<string, number>();
  const aloneModules = new Map<string, number>();
  const oursMs: number[] = [];
  const aloneMs: number[] = [];
  const oursSamples: number[] = [];
  const aloneSamples: number[] = [];
  let sizes = { ours: '?', alone: '?' };
  for (let round = 0; round < ROUNDS; round++) {
    const a = checkStartup(ours, '.flue.wrangler.json');
    const b = checkStartup(alone, 'wrangler.json');
    selfTimeByModule(a.profile, oursJs, oursModules);
    selfTimeByModule(b.profile, aloneJs, aloneModules);
    oursMs.push(a.activeMs);
    aloneMs.push(b.activeMs);
    oursSamples.push(a.samples);
    aloneSamples.push(b.samples);
    sizes = { ours: a.bundleKiB, alone: b.bundleKiB };
    console.log(`  round ${round + 1}: ours ${a.activeMs} ms, provider alone ${b.activeMs} ms`);
  }
  const [o, p] = [median(oursMs), median(aloneMs)];
  const ratio = o / p;
  const rows: BenchRow[] = [
    {
      figure: `Worker startup CPU, template with one agent (${PROVIDER} inferred)${MINIFY ? ', minified' : ''}`,
      ours: `${o.toFixed(0)} ms`,
      baseline: `${p.toFixed(0)} ms`,
      note: `a Worker with only ${PROVIDER}'s pi-ai code`,
      ratio: `${ratio.toFixed(2)}×`,
      target: `≤ ${TARGET_RATIO}×, ≪ ${LIMIT_MS} ms limit`,
      met: ratio <= TARGET_RATIO && o < LIMIT_MS / 4,
    },
  ];
  const method = `wrangler check startup (local workerd, V8 sampling profile, active CPU), median of ${ROUNDS} alternating rounds`;
  saveRows(MINIFY ? 'startup-minified' : 'startup', method, rows);
  console.log(`Worker startup (${method})`);
  console.log(
    `  ours ${o} ms (bundle ${sizes.ours}) vs provider alone ${p} ms (bundle ${sizes.alone}) → ${ratio.toFixed(2)}× (target ≤ ${TARGET_RATIO}×)`,
  );
  console.log(`  all rounds: ours [${oursMs.join(', ')}], provider alone [${aloneMs.join(', ')}]`);
  const [os, ps] = [median(oursSamples), median(aloneSamples)];
  console.log(
    `  non-idle samples (steadier under load): ours ${os} vs provider alone ${ps} → ${(os / ps).toFixed(2)}×; ` +
      `rounds: ours [${oursSamples.join(', ')}], provider alone [${aloneSamples.join(', ')}]`,
  );
  const top = (modules: Map<string, number>) =>
    [...modules]
      .sort((x, y) => y[1] - x[1])
      .slice(0, 14)
      .map(([module, ms]) => `    ${(ms / ROUNDS).toFixed(1).padStart(6)} ms  ${module}`);
  console.log('  where the startup CPU goes, ours (self time per module, mean per round):');
  console.log(top(oursModules).join('\n'));
  console.log('  provider alone:');
  console.log(top(aloneModules).join('\n'));
} finally {
  removeDir(ours);
  removeDir(alone);
}
