/**
 * Before against after on `wrangler dev`: the bench project (wrangler-cpu-project.ts) built from a
 * git revision ("before") and from this checkout ("after"), each on its own `wrangler dev`, their
 * workerd CPU for the same scenario measured in alternating rounds, so load on the machine hits
 * both alike. `npm run bench -- wrangler` compares ours with a bare object across runs whose spread
 * is wider than a change of a few percent; this shows such a change as a ratio of two builds of ours.
 *
 *   npx node bench/node/wrangler-ab.ts <revision> [fanout|turns|burst] [rounds]
 *
 * fanout: 200 one-turn conversations at once; turns: one new conversation of 20 turns; burst: 250
 * concurrent sends to a conversation that has had one turn (that turn outside the figure). Each
 * round uses new conversations; the backstops a round leaves to lapse run after it, outside its
 * figure (as in wrangler-cpu.ts). Figures: the Worker's workerd CPU per round, medians, and the
 * median of per-round ratios; for bursts also each round's model requests (joined sends share
 * exchanges, so a burst's count varies, and its CPU with it). Not part of `npm run bench`.
 */
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { median } from '../results.ts';
import { revisionCopy, root } from './revision-copy.ts';
import { startSideBySideServer } from './side-by-side-server.ts';
import { expectedReply } from './side-by-side-script.ts';
import { lapse, turn } from './wrangler-turn.ts';
import type { DevServer } from '../../test/support/wrangler-dev.ts';
import { cpuMs, processesOf, withoutLocalTraceCollector } from './wrangler-processes.ts';

type Scenario = 'fanout' | 'turns' | 'burst';
type Side = 'before' | 'after';

const [revision, scenarioArg = 'fanout', roundsArg] = process.argv.slice(2);
if (revision === undefined || (scenarioArg !== 'fanout' && scenarioArg !== 'turns' && scenarioArg !== 'burst')) {
  console.error('usage: npx node bench/node/wrangler-ab.ts <revision> [fanout|turns|burst] [rounds]');
  process.exit(1);
}
const scenario: Scenario = scenarioArg;
const rounds = Number(roundsArg ?? 8);
const FANOUT = 200;
const TURNS = 20;
const BURST = 250;

/**
 * The bench project built with `base`'s own code (a revision's copy, or this checkout): made
 * inside `base` but outside its node_modules, so the build and the Worker resolve `@flue/runtime`
 * to `base` itself (a copy's node_modules/.cache links to this checkout's).
 */
async function benchProject(base: string): Promise<string> {
  const { writeBenchProject } = (await import(
    path.join(base, 'bench/node/wrangler-cpu-project.ts')
  )) as typeof import('./wrangler-cpu-project.ts');
  const { buildProject } = (await import(
    path.join(base, 'test/support/wrangler-dev.ts')
  )) as typeof import('../../test/support/wrangler-dev.ts');
  const dir = path.join(base, 'bench', '.results', 'wrangler-ab-project');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  cpSync(path.join(base, 'templates', 'cloudflare'), dir, { recursive: true });
  writeBenchProject(dir);
  buildProject(dir);
  return dir;
}

/** The Worker's workerd CPU in ms, as wrangler-cpu.ts reads it. */
function workerCpuMs(dev: DevServer): number {
  return cpuMs(processesOf(dev.pid).worker);
}

/** One round's conversations, the CPU of their turns (their lapses run after, outside it) and the model requests they made. */
async function round(dev: DevServer, tag: string): Promise<{ cpu: number; requests: number }> {
  const ids = scenario === 'fanout' ? Array.from({ length: FANOUT }, (_, i) => `ab-${tag}-${i}`) : [`ab-${tag}`];
  if (scenario === 'burst') await turn(dev, ids[0]!, `${ids[0]}-first`);
  const requests = server.requests.length;
  const before = workerCpuMs(dev);
  switch (scenario) {
    case 'fanout':
      await Promise.all(ids.map((id) => turn(dev, id, id)));
      break;
    case 'turns':
      for (let t = 1; t <= TURNS; t++) await turn(dev, ids[0]!, `${ids[0]}-${t}`);
      break;
    case 'burst': {
      const keys = Array.from({ length: BURST }, (_, i) => `${ids[0]}-${i}`);
      const accept = new Set(keys.map(expectedReply));
      await Promise.all(keys.map((key) => turn(dev, ids[0]!, key, accept)));
      break;
    }
    default:
      scenario satisfies never;
  }
  const cpu = workerCpuMs(dev) - before;
  const made = server.requests.length - requests;
  await lapse(dev, ids);
  return { cpu, requests: made };
}

const { startWranglerDev } = await import('../../test/support/wrangler-dev.ts');
const bases: Record<Side, string> = { before: revisionCopy(revision), after: root };
const { buildDist, isStale } = await import('../../scripts/build-dist.mjs');
if (isStale()) await buildDist();
// Every side's workerd runs its Worker alone, as on Cloudflare (wrangler-processes.ts).
withoutLocalTraceCollector();
const server = await startSideBySideServer();
const devs: Partial<Record<Side, DevServer>> = {};
const samples: Record<Side, { cpu: number; requests: number }[]> = { before: [], after: [] };
const sides: Side[] = ['before', 'after'];
const loadBefore = loadavg()[0]!;
try {
  for (const side of sides) {
    devs[side] = await startWranglerDev(await benchProject(bases[side]), { FLUE_SCRIPTED_MODEL_URL: server.url });
  }
  // One discarded round each: first-call costs (module loads, JIT) are not the figure's.
  for (const side of sides) await round(devs[side]!, `${side}-warm`);
  for (let r = 0; r < rounds; r++) {
    // The order alternates, so neither side always runs first.
    for (const side of r % 2 === 0 ? sides : [...sides].reverse()) samples[side].push(await round(devs[side]!, `${side}-${r}`));
  }
} finally {
  await Promise.all(Object.values(devs).map((dev) => dev.stop()));
  await server.close();
}

const FIGURES: Record<Scenario, string> = {
  fanout: `${FANOUT} one-turn conversations at once`,
  turns: `one conversation of ${TURNS} turns`,
  burst: `${BURST} concurrent sends to one conversation`,
};
console.log(
  `${scenario}: the Worker's workerd CPU, ${FIGURES[scenario]}; ${rounds} rounds, load average ${loadBefore.toFixed(1)} → ${loadavg()[0]!.toFixed(1)}`,
);
const cpus = (side: Side) => samples[side].map((sample) => sample.cpu);
for (const side of sides) {
  const requests = scenario === 'burst' ? `; model requests ${samples[side].map((sample) => sample.requests).join(' ')}` : '';
  console.log(
    `  ${side.padEnd(6)} median ${median(cpus(side)).toFixed(0)} ms  [${cpus(side)
      .map((ms) => ms.toFixed(0))
      .join(' ')}]${requests}`,
  );
}
const ratios = cpus('after').map((ms, i) => ms / cpus('before')[i]!);
console.log(
  `  after / before: ${(median(cpus('after')) / median(cpus('before'))).toFixed(3)}× (medians), ${median(ratios).toFixed(3)}× (median of per-round ratios)`,
);
