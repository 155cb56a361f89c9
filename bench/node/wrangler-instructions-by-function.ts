/**
 * Where the counted instructions of `wrangler-instructions.ts --keep` went, by function: each
 * side's self cost (instructions spent in a function's own code, not in what it calls), summed by
 * kind (the collector, V8's runtime, builtins, SQLite, JSON, the structured clone, workerd, …),
 * then the functions whose self cost differs most between ours and the bare Worker.
 *
 *   MINIFLARE_WORKERD_V8_FLAGS=--perf-basic-prof npx node bench/node/wrangler-instructions.ts burst 250 --keep
 *   npx node bench/node/wrangler-instructions-by-function.ts
 *
 * V8's compiled JavaScript has no symbols in a callgrind profile (its functions are `0x…`
 * addresses); with `--perf-basic-prof` V8 writes `/tmp/perf-<pid>.map`, whose ranges name them
 * (the profile's `pid:` line says which map is its own). Without the map they stay addresses.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { resultsDir } from '../results.ts';

type Side = 'ours' | 'bare';

/** Self cost by function name (the first event, instructions), and the process id of the profile. */
function selfCosts(file: string): { pid: number; costs: Map<string, number> } {
  const names = new Map<string, string>();
  const costs = new Map<string, number>();
  let pid = 0;
  let current: string | undefined;
  // The cost line after `calls=` is the call's inclusive cost, not the caller's own.
  let afterCall = false;
  const named = (spec: string) => {
    const match = /^\((\d+)\)(?: (.*))?$/.exec(spec);
    if (match === null) return spec;
    if (match[2] !== undefined) names.set(match[1]!, match[2]);
    return names.get(match[1]!) ?? spec;
  };
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('pid:')) pid = Number(line.slice(4));
    else if (line.startsWith('fn=')) {
      current = named(line.slice(3));
      afterCall = false;
    } else if (line.startsWith('cfn=')) named(line.slice(4));
    else if (line.startsWith('calls=')) afterCall = true;
    else if (/^[0-9+\-*]/.test(line)) {
      if (afterCall) {
        afterCall = false;
        continue;
      }
      const cost = Number(line.split(' ')[1]);
      if (current !== undefined && Number.isFinite(cost)) costs.set(current, (costs.get(current) ?? 0) + cost);
    }
  }
  return { pid, costs };
}

interface MapEntry {
  start: number;
  end: number;
  name: string;
}

/** The JavaScript function of each `0x…` address, from V8's perf map of that process. */
function jsNames(pid: number): ((address: number) => string | undefined) | undefined {
  const file = `/tmp/perf-${pid}.map`;
  if (!existsSync(file)) return undefined;
  const entries: MapEntry[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [start, size, ...name] = line.split(' ');
    if (start === undefined || size === undefined || name.length === 0) continue;
    const at = Number.parseInt(start, 16);
    entries.push({ start: at, end: at + Number.parseInt(size, 16), name: name.join(' ') });
  }
  entries.sort((a, b) => a.start - b.start);
  return (address) => {
    // The last entry that starts at or before the address (code moved later is logged later).
    let low = 0;
    let high = entries.length - 1;
    let found = -1;
    while (low <= high) {
      const mid = (low + high) >> 1;
      if (entries[mid]!.start <= address) {
        found = mid;
        low = mid + 1;
      } else high = mid - 1;
    }
    for (let i = found; i >= 0 && i > found - 64; i--) if (address < entries[i]!.end) return entries[i]!.name;
    return undefined;
  };
}

function byFunction(side: Side): Map<string, number> {
  const { pid, costs } = selfCosts(path.join(resultsDir, `wrangler-instructions-${side}.out`));
  const resolve = jsNames(pid);
  const named = new Map<string, number>();
  for (const [name, cost] of costs) {
    // A recursive call's cost is named `…'2`: the same function.
    const address = /^(?:\?\?\?:)?0x([0-9a-f]+)(?:'\d+)?$/.exec(name)?.[1];
    const js = address === undefined ? undefined : resolve?.(Number.parseInt(address, 16));
    const key = js === undefined ? name : `JS ${js.replace(/^JS:[*~+^]?'?/, '')}`;
    named.set(key, (named.get(key) ?? 0) + cost);
  }
  return named;
}

/** The kind of work a function is, by its name. */
function kind(name: string): string {
  if (name.startsWith('JS ')) return 'JavaScript (JIT-compiled)';
  if (/^0x|\?\?\?:0x/.test(name)) return 'JavaScript (unnamed)';
  if (name.includes('Builtins_')) return 'V8 builtins';
  if (/sqlite3|^wal|pager|btree/i.test(name)) return 'SQLite';
  if (/Scaveng|OnMoveEvent|heap::base|MarkCompact|Sweep|Marking|Evacuat|IterateJSObjectBody|SizeFromMap|GlobalHandles/.test(name))
    return 'collector';
  if (/tcmalloc|operator new|operator delete|malloc|^free/.test(name)) return 'C++ allocation';
  if (/memset|memcpy|memmove|memcmp|strlen/.test(name)) return 'libc memory';
  if (/maglev|compiler::|turboshaft/.test(name)) return 'optimizing compilers';
  if (name.includes('Json')) return 'JSON';
  if (/ValueSerializer|ValueDeserializer/.test(name)) return 'structured clone';
  if (/longest_match|deflate|compress_block|build_tree|sha256|crc32/.test(name)) return 'gzip and hashing';
  if (name.includes('v8::')) return 'V8 runtime';
  if (/workerd::|jsg::/.test(name)) return 'workerd';
  if (/kj::|capnp::/.test(name)) return "Cap'n Proto and kj";
  return 'other';
}

const sides = { ours: byFunction('ours'), bare: byFunction('bare') };
const total = (costs: Map<string, number>) => [...costs.values()].reduce((a, b) => a + b, 0);
const m = (value: number) => `${(value / 1e6).toFixed(1)} M`;
console.log(`self cost, counted: ours ${m(total(sides.ours))}, bare ${m(total(sides.bare))}\n`);

const kinds = new Map<string, { ours: number; bare: number }>();
for (const side of ['ours', 'bare'] as const) {
  for (const [name, cost] of sides[side]) {
    const entry = kinds.get(kind(name)) ?? { ours: 0, bare: 0 };
    entry[side] += cost;
    kinds.set(kind(name), entry);
  }
}
console.log('| kind | ours | bare | difference |\n| --- | --- | --- | --- |');
for (const [name, { ours, bare }] of [...kinds].sort((a, b) => b[1].ours - b[1].bare - (a[1].ours - a[1].bare))) {
  console.log(`| ${name} | ${m(ours)} | ${m(bare)} | ${m(ours - bare)} |`);
}

const names = new Set([...sides.ours.keys(), ...sides.bare.keys()]);
const difference = (name: string) => (sides.ours.get(name) ?? 0) - (sides.bare.get(name) ?? 0);
console.log('\nthe 40 functions whose self cost differs most (ours − bare):');
for (const name of [...names].sort((a, b) => difference(b) - difference(a)).slice(0, 40)) {
  console.log(`  ${m(difference(name)).padStart(8)}  ours ${m(sides.ours.get(name) ?? 0).padStart(8)}  ${name.slice(0, 140)}`);
}
