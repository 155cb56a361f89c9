/**
 * Instructions per exchange, counted: the child of `faux-overhead.ts` (pi-ai's faux provider, no
 * network) run under valgrind's callgrind with V8 made deterministic (`--single-threaded
 * --predictable`, garbage collected before and after the exchanges), once with 20 exchanges and
 * once with 120; the difference over 100 is one exchange's instructions, within about 0.5% from
 * run to run (timers and clock reads still follow real time, which valgrind slows), where CPU time
 * on these shared machines moves by ±10%. The exchanges are few, as in the side-by-side fan-out:
 * most of ours runs in V8's baseline tier. The default count also
 * holds what TurboFan happens to compile within the window, which a small change moves by several
 * percent either way; compare changes with `--no-opt` (no optimizing compiler), the work itself,
 * where a change of 1% shows. Needs `valgrind` on the PATH; each count takes 20–40 s. Not part of
 * `npm run bench`.
 *
 *   npx node bench/node/faux-instructions.ts            # ours and the floor
 *   npx node bench/node/faux-instructions.ts ours       # one side
 *   npx node bench/node/faux-instructions.ts --no-opt   # without optimizing compilers
 *   npx node bench/node/faux-instructions.ts --no-opt --by-function
 *
 * `--by-function` also keeps callgrind's profiles and prints, per exchange, the native functions
 * (V8's builtins and runtime, SQLite, libc) whose instructions differ most between ours and the
 * floor. JavaScript compiled by V8 has no symbols there: what ours' own JavaScript costs shows as
 * the builtins it calls (property-access inline caches, calls, object literals, JSON, the collector).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const FEW = 20;
const MANY = 120;
const child = fileURLToPath(new URL('./faux-overhead.ts', import.meta.url));
const noOpt = process.argv.includes('--no-opt');
const byFunction = process.argv.includes('--by-function');
const profiles = byFunction ? mkdtempSync(path.join(tmpdir(), 'faux-instructions-')) : undefined;
/** The sides named on the command line, or both (`--by-function` compares them: always both). */
const named = (['ours', 'floor'] as const).filter((side) => process.argv.includes(side));
const sides = named.length > 0 && !byFunction ? named : (['ours', 'floor'] as const);

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
      `--callgrind-out-file=${profiles === undefined ? '/dev/null' : profileFile(side, exchanges)}`,
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

function profileFile(side: 'ours' | 'floor', exchanges: number): string {
  return path.join(profiles!, `${side}-${exchanges}.out`);
}

/** Instructions by native function (self cost), as callgrind_annotate reads a kept profile. */
function byNativeFunction(side: 'ours' | 'floor', exchanges: number): Map<string, number> {
  const annotated = spawnSync('callgrind_annotate', ['--threshold=100', profileFile(side, exchanges)], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  if (annotated.status !== 0) throw new Error(`callgrind_annotate failed:\n${annotated.stderr}`);
  const counts = new Map<string, number>();
  for (const line of annotated.stdout.split('\n')) {
    // `1,234,567 (12.34%)  file:function [object]`
    const match = /^\s*([\d,]+)\s+\([\s\d.]+%\)\s+(.+)$/.exec(line);
    if (match === null || match[2]!.startsWith('PROGRAM TOTALS')) continue;
    const name = match[2]!.replace(/^\?\?\?:/, '').replace(/\s*\[[^\]]*\]\s*$/, '');
    counts.set(name, (counts.get(name) ?? 0) + Number(match[1]!.replaceAll(',', '')));
  }
  return counts;
}

/** Each native function's instructions an exchange: the difference between the two counts. */
function perExchangeByFunction(side: 'ours' | 'floor'): Map<string, number> {
  const few = byNativeFunction(side, FEW);
  const many = byNativeFunction(side, MANY);
  return new Map([...many].map(([name, count]) => [name, (count - (few.get(name) ?? 0)) / (MANY - FEW)]));
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
if (profiles !== undefined) {
  const ours = perExchangeByFunction('ours');
  const floor = perExchangeByFunction('floor');
  const rows = [...new Set([...ours.keys(), ...floor.keys()])]
    .map((name) => ({ name, ours: ours.get(name) ?? 0, floor: floor.get(name) ?? 0 }))
    .sort((a, b) => b.ours - b.floor - (a.ours - a.floor));
  console.log('\ninstructions an exchange by native function, most over the floor first (ours − floor, ours, floor):');
  for (const row of rows.slice(0, 40)) {
    const k = (count: number) => `${(count / 1000).toFixed(0)}K`.padStart(7);
    console.log(`${k(row.ours - row.floor)} ${k(row.ours)} ${k(row.floor)}  ${row.name.slice(0, 110)}`);
  }
  rmSync(profiles, { recursive: true, force: true });
}
