/**
 * Before against after, one side-by-side scenario at a time: ours built from a git revision
 * ("before") and ours as checked out ("after"), alternating with the floor in one loop, so load on
 * the machine hits all three alike. A change too small for the full side-by-side's spread (a few
 * milliseconds of a cold start, a few percent of the fan-out's CPU) shows here as a ratio.
 *
 *   npx node bench/node/side-by-side-ab.ts <revision> [cold|fanout] [rounds]
 *
 * The revision's sources are exported into bench/.results/ab/<commit>/ (dependencies linked from
 * this checkout, `@flue/runtime` pointed at the copy) and built to its own dist/ once; its own
 * side-by-side child drives it. Figures: medians over the rounds, and the medians of per-round
 * ratios (each child against the floor of the same round). Not part of `npm run bench`.
 */
import { loadavg } from 'node:os';
import path from 'node:path';
import { median } from '../results.ts';
import { revisionCopy, root } from './revision-copy.ts';
import { startSideBySideServer } from './side-by-side-server.ts';
import { runSideBySideChild } from './side-by-side-spawn.ts';

type Scenario = 'cold' | 'fanout';
type Side = 'before' | 'after' | 'floor';

const [revision, scenarioArg = 'cold', roundsArg] = process.argv.slice(2);
if (revision === undefined || (scenarioArg !== 'cold' && scenarioArg !== 'fanout')) {
  console.error('usage: npx node bench/node/side-by-side-ab.ts <revision> [cold|fanout] [rounds]');
  process.exit(1);
}
const scenario: Scenario = scenarioArg;
const rounds = Number(roundsArg ?? (scenario === 'cold' ? 20 : 8));

const before = revisionCopy(revision);
const { buildDist, isStale } = await import('../../scripts/build-dist.mjs');
if (isStale()) await buildDist();

const children: Record<Side, { child: string; runtime: 'ours' | 'floor' }> = {
  before: { child: path.join(before, 'bench', 'node', 'side-by-side-child.ts'), runtime: 'ours' },
  after: { child: path.join(root, 'bench', 'node', 'side-by-side-child.ts'), runtime: 'ours' },
  floor: { child: path.join(root, 'bench', 'node', 'side-by-side-child.ts'), runtime: 'floor' },
};

const server = await startSideBySideServer();

/** Cold: spawn → the child's `@@settled` line. Fan-out: the child's CPU for the 200 conversations. */
async function measure(side: Side): Promise<number> {
  const { child, runtime } = children[side];
  const { result, settledMs } = await runSideBySideChild(child, [runtime, scenario, server.url], side);
  return scenario === 'cold' ? settledMs! : (result.cpuMs as number);
}

const sides: Side[] = ['before', 'after', 'floor'];
const samples: Record<Side, number[]> = { before: [], after: [], floor: [] };
const loadBefore = loadavg()[0]!;
try {
  for (let round = 0; round < rounds; round++) {
    // The order rotates, so no side always runs first or right after another.
    for (let i = 0; i < sides.length; i++) {
      const side = sides[(i + round) % sides.length]!;
      samples[side].push(await measure(side));
    }
  }
} finally {
  await server.close();
}

const figure = scenario === 'cold' ? 'spawn → first settled reply' : 'CPU of 200 one-turn conversations, 8 at a time';
console.log(`${scenario}: ${figure}; ${rounds} rounds, load average ${loadBefore.toFixed(1)} → ${loadavg()[0]!.toFixed(1)}`);
for (const side of sides) {
  console.log(`  ${side.padEnd(6)} median ${median(samples[side]).toFixed(0)} ms  [${samples[side].map((ms) => ms.toFixed(0)).join(' ')}]`);
}
const perRound = (of: Side, against: Side) => median(samples[of].map((ms, i) => ms / samples[against][i]!));
for (const side of ['before', 'after'] as const) {
  const ofMedians = median(samples[side]) / median(samples.floor);
  console.log(`  ${side} / floor: ${ofMedians.toFixed(3)}× (medians), ${perRound(side, 'floor').toFixed(3)}× (median of per-round ratios)`);
}
console.log(`  after / before: ${perRound('after', 'before').toFixed(3)}× (median of per-round ratios)`);
