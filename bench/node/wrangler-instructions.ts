/**
 * Instructions, counted, of a Worker's workerd on `wrangler dev`: the bench project of
 * wrangler-cpu.ts (ours) and the bare Worker + Durable Object, each on its own `wrangler dev`
 * whose Worker process runs under valgrind's callgrind, both at once, the same scenario on each.
 * The count covers only the scenario (callgrind's counters are zeroed before it and dumped after
 * it; warm-up rounds (two, or `WARMUP_BURSTS` before a burst) and, for ours, the backstops they
 * leave run first). Process CPU on these machines moves by ±15% from round to round; two runs of
 * this agree within about 1% on turns and fan-outs, and a burst's sides move by up to 3% each (when
 * its joins fall differs), so read a burst's change of a few percent over several runs. Run both
 * sides at once, always: under valgrind a Worker alone runs faster in wall time, its timers and
 * V8's background compiles land differently, and its count moves by up to 15%. Needs Linux and
 * `valgrind`; about 3 minutes. Not part of `npm run bench`.
 *
 *   npx node bench/node/wrangler-instructions.ts [fanout|turns|burst] [n] [--receipt] [--keep]
 *
 * fanout: n (default 20) one-turn conversations at once; turns: n (default 20) follow-up turns of
 * one conversation; burst: n (default 250) concurrent sends to a conversation that has had one
 * turn. `--receipt` sends the bare Worker's messages to its `POST /receipt/:id`: a call that
 * admits for a receipt, then a call on the receipt for the reply, the two calls of
 * `read(await dispatch(text))`. `--keep` keeps the profiles
 * (bench/.results/wrangler-instructions-<side>.out) for `callgrind_annotate`; JavaScript compiled by V8 has no symbols there (its functions are `0x…`
 * addresses), workerd's own code (SQLite, RPC, V8's builtins and runtime) has. With
 * `MINIFLARE_WORKERD_V8_FLAGS=--perf-basic-prof` V8 writes `/tmp/perf-<pid>.map`, which names each
 * address's JavaScript function (the flag's logging adds a few percent to both sides, and leaves
 * V8's `isolate-*-v8.log` files in the bare Worker's folder, which git ignores);
 * wrangler-instructions-by-function.ts reads both and sums the profiles by kind and function.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeDir, templateCopy } from '../../src/build/test-project.ts';
import { buildProject, startWranglerDev, type DevServer } from '../../test/support/wrangler-dev.ts';
import { resultsDir } from '../results.ts';
import { startSideBySideServer } from './side-by-side-server.ts';
import { expectedReply } from './side-by-side-script.ts';
import { writeBenchProject } from './wrangler-cpu-project.ts';
import { processesOf, withoutLocalTraceCollector } from './wrangler-processes.ts';
import { WARMUP_BURSTS, lapse, turn as sendTurn } from './wrangler-turn.ts';

type Scenario = 'fanout' | 'turns' | 'burst';
type Side = 'ours' | 'bare';

const scenarioArg = process.argv[2] ?? 'fanout';
if (scenarioArg !== 'fanout' && scenarioArg !== 'turns' && scenarioArg !== 'burst') {
  console.error('usage: npx node bench/node/wrangler-instructions.ts [fanout|turns|burst] [n] [--receipt] [--keep]');
  process.exit(1);
}
const scenario: Scenario = scenarioArg;
const n = Number(process.argv[3] ?? (scenario === 'burst' ? 250 : 20));
const keep = process.argv.includes('--keep');
const receipt = process.argv.includes('--receipt');
if (spawnSync('valgrind', ['--version']).status !== 0) {
  console.error('wrangler-instructions.ts needs valgrind (callgrind) on the PATH, e.g. `apt-get install valgrind`.');
  process.exit(1);
}

withoutLocalTraceCollector();
const work = path.join(resultsDir, 'wrangler-instructions');
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
// Miniflare starts workerd from MINIFLARE_WORKERD_PATH: this script runs the Worker's process (the
// one with an inspector) under callgrind, one profile per process id, and wrangler's proxy as it is.
const workerd = fileURLToPath(new URL('../../node_modules/@cloudflare/workerd-linux-64/bin/workerd', import.meta.url));
const wrapper = path.join(work, 'workerd.sh');
writeFileSync(
  wrapper,
  `#!/bin/sh
case "$*" in
  *--inspector-addr*) exec valgrind --tool=callgrind --smc-check=all-non-file --callgrind-out-file=${work}/%p.out "${workerd}" "$@" 2>/dev/null ;;
esac
exec "${workerd}" "$@"
`,
);
chmodSync(wrapper, 0o755);
process.env.MINIFLARE_WORKERD_PATH = wrapper;

/** One round of the scenario under `name`; the conversations it used. */
async function round(dev: DevServer, name: string, side: Side): Promise<string[]> {
  const turn = (dev: DevServer, conversation: string, key: string, accept?: Set<string>) =>
    sendTurn(dev, conversation, key, accept, receipt && side === 'bare' ? 'receipt' : 'turn', side);
  switch (scenario) {
    case 'fanout': {
      const ids = Array.from({ length: n }, (_, i) => `${name}-${i}`);
      await Promise.all(ids.map((id) => turn(dev, id, id)));
      return ids;
    }
    case 'turns':
      for (let t = 1; t <= n; t++) await turn(dev, name, `${name}-${t}`);
      return [name];
    case 'burst': {
      const keys = Array.from({ length: n }, (_, i) => `${name}-${i}`);
      const accept = new Set(keys.map(expectedReply));
      await Promise.all(keys.map((key) => turn(dev, name, key, accept)));
      return [name];
    }
    default:
      return scenario satisfies never;
  }
}

/** Ours leaves a backstop alarm to lapse after its work (wrangler-cpu.ts): run now, outside the count. */
async function lapseOurs(side: Side, dev: DevServer, ids: string[]): Promise<void> {
  if (side === 'ours') await lapse(dev, ids);
}

/** The side's instructions for one round of the scenario, after its warm-up rounds, and the model requests that round made. */
async function count(side: Side, project: string): Promise<{ instructions: number; requests: number }> {
  // A model server per side: both run at once, and the requests each made are its own figure.
  const server = await startSideBySideServer();
  try {
    return await countWith(side, project, server);
  } finally {
    await server.close();
  }
}

async function countWith(
  side: Side,
  project: string,
  server: Awaited<ReturnType<typeof startSideBySideServer>>,
): Promise<{ instructions: number; requests: number }> {
  const dev =
    side === 'ours'
      ? await startWranglerDev(project, { FLUE_SCRIPTED_MODEL_URL: server.url }, 600_000)
      : await startWranglerDev(
          fileURLToPath(new URL('../workers/bare-turns/', import.meta.url)),
          { MODEL_URL: server.url },
          600_000,
          'wrangler.jsonc',
          ['--persist-to', path.join(project, '.state-bare')],
        );
  try {
    const pid = String(processesOf(dev.pid).worker);
    const paused = await fetch(`${dev.base}/meter/pause`, { method: 'POST' });
    if (paused.status !== 204) throw new Error(`/meter/pause answered ${paused.status}`);
    const warmUps = Array.from({ length: scenario === 'burst' ? WARMUP_BURSTS : 2 }, (_, i) => `warm-${i}`);
    for (const name of [...warmUps, 'counted']) {
      // In turns and bursts the conversation has had its first turn: the figure is follow-ups'.
      if (scenario !== 'fanout') {
        await sendTurn(dev, name, `${name}-first`, undefined, 'turn', side);
        await lapseOurs(side, dev, [name]);
      }
      if (name === 'counted') break;
      await lapseOurs(side, dev, await round(dev, name, side));
    }
    execFileSync('callgrind_control', ['--zero', pid], { stdio: 'ignore' });
    const before = server.requests.length;
    await round(dev, 'counted', side);
    const requests = server.requests.length - before;
    execFileSync('callgrind_control', ['--dump=counted', pid], { stdio: 'ignore' });
    const profile = path.join(work, `${pid}.out.1`);
    if (keep) copyFileSync(profile, path.join(resultsDir, `wrangler-instructions-${side}.out`));
    return { instructions: Number(/^summary: (\d+)$/m.exec(readFileSync(profile, 'utf8'))![1]), requests };
  } finally {
    await dev.stop();
  }
}

const project = templateCopy('bench-wrangler-instructions');
try {
  writeBenchProject(project);
  buildProject(project);
  // Both sides settle before anything is reported or removed: a side that fails must not leave the
  // other's `wrangler dev` (and its workerd under valgrind) running after this process exits.
  const settled = await Promise.allSettled((['ours', 'bare'] as const).map((side) => count(side, project)));
  const [ours, bare] = settled.map((result) => {
    if (result.status === 'rejected') throw result.reason;
    return result.value;
  });
  const label = { fanout: `${n} one-turn conversations at once`, turns: `${n} follow-up turns`, burst: `${n} concurrent sends` }[scenario];
  console.log(`${label}: the Worker's workerd, instructions (callgrind)${receipt ? '; the bare Worker with a receipt' : ''}`);
  const [o, b] = [ours!.instructions, bare!.instructions];
  console.log(`  ours ${(o / 1e6).toFixed(1)} M, bare ${(b / 1e6).toFixed(1)} M: ${(o / b).toFixed(3)}×`);
  console.log(`  model requests: ours ${ours!.requests}, bare ${bare!.requests}`);
} finally {
  removeDir(project);
  rmSync(work, { recursive: true, force: true });
}
