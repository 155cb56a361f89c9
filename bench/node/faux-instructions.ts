/**
 * Instructions per exchange, counted: the child of `faux-overhead.ts` (pi-ai's faux provider, no
 * network) run under valgrind's callgrind with V8 made deterministic (`--single-threaded
 * --predictable`, garbage collected before and after the exchanges), once with 20 exchanges and
 * once with 120; the difference over 100 is one exchange's instructions, the same to the digit
 * from run to run, where CPU time on these shared machines moves by ±10%. The exchanges are few,
 * as in the side-by-side fan-out: most of ours runs in V8's baseline tier. The default count also
 * holds what TurboFan happens to compile within the window, which a small change moves by several
 * percent either way; compare changes with `--no-opt` (no optimizing compiler), the work itself,
 * where a change of 1% shows. Needs `valgrind` on the PATH; each count takes 20–40 s. Not part of
 * `npm run bench`.
 *
 *   npx node bench/node/faux-instructions.ts            # ours and the floor
 *   npx node bench/node/faux-instructions.ts ours       # one side
 *   npx node bench/node/faux-instructions.ts --no-opt   # without optimizing compilers
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const FEW = 20;
const MANY = 120;
const child = fileURLToPath(new URL('./faux-overhead.ts', import.meta.url));
const noOpt = process.argv.includes('--no-opt');
/** The sides named on the command line, or both. */
const named = (['ours', 'floor'] as const).filter((side) => process.argv.includes(side));
const sides = named.length > 0 ? named : (['ours', 'floor'] as const);

const found = spawnSync('valgrind', ['--version'], { encoding: 'utf8' });
if (found.status !== 0) {
  console.error('faux-instructions.ts needs valgrind (callgrind) on the PATH, e.g. `apt-get install valgrind`.');
  process.exit(1);
}

/** Instructions the child executed with `exchanges` exchanges, start to exit. */
function instructions(side: 'ours' | 'floor', exchanges: number): number {
  const v8 = ['--single-threaded', '--predictable', '--expose-gc', ...(noOpt ? ['--max-opt=1'] : [])];
  const run = spawnSync(
    'valgrind',
    [
      '--tool=callgrind',
      // V8 writes code it then runs: valgrind must see every write to it.
      '--smc-check=all-non-file',
      '--callgrind-out-file=/dev/null',
      process.execPath,
      ...v8,
      '--disable-warning=ExperimentalWarning',
      child,
      '--child',
      side,
      String(exchanges),
    ],
    { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  const collected = /Collected : (\d+)/.exec(run.stderr)?.[1];
  if (run.status !== 0 || collected === undefined)
    throw new Error(`${side} with ${exchanges} exchanges failed:\n${run.stderr.slice(-2000)}`);
  return Number(collected);
}

const perExchange: Partial<Record<'ours' | 'floor', number>> = {};
for (const side of sides) {
  perExchange[side] = (instructions(side, MANY) - instructions(side, FEW)) / (MANY - FEW);
  console.log(
    `${side.padEnd(5)} ${(perExchange[side]! / 1e6).toFixed(3)} M instructions an exchange${noOpt ? ' (no optimizing compilers)' : ''}`,
  );
}
if (perExchange.ours !== undefined && perExchange.floor !== undefined) {
  console.log(`ours' own: ${((perExchange.ours - perExchange.floor) / 1e6).toFixed(3)} M instructions an exchange`);
}
