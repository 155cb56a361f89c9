/**
 * `npm run bench`: every benchmark in turn, then one table of all their figures.
 *
 * Each benchmark runs in its own process (so one's memory and JIT state do not colour the next)
 * with its output shown as it goes. Node benchmarks save their rows (results.ts); the workerd one
 * prints them on a marked line (rows.ts) that is saved here.
 *
 *   npm run bench                 # everything, about 8 minutes on 2 cores
 *   npm run bench -- replay bundle    # only the named benchmarks
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ROWS_MARKER } from './rows.ts';
import { loadGroups, markdownTable, saveRows } from './results.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const node = [process.execPath, '--disable-warning=ExperimentalWarning'];

const BENCHMARKS: Record<string, { what: string; command: string[]; env?: Record<string, string> }> = {
  original: { what: 'side by side with the original runtime on Node', command: [...node, 'bench/node/side-by-side.ts'] },
  replay: { what: 'replay: tail reads of a long conversation', command: [...node, 'bench/node/replay.ts'] },
  history: {
    what: 'history: waking a long conversation (1 MB, 100 MB, 1 GB of history in an sqlite() file) in a fresh process',
    command: [...node, 'bench/node/history.ts'],
  },
  'history-workerd': {
    what: 'history in workerd: a conversation with 200 MB of history takes a message after a restart, and the isolate memory it needs (wrangler dev)',
    command: [...node, 'bench/node/history-workerd.ts'],
  },
  bundle: { what: 'Worker bundle size', command: [...node, 'bench/node/bundle-size.ts'] },
  startup: { what: 'Worker startup CPU (wrangler check startup)', command: [...node, 'bench/node/startup.ts'] },
  load: { what: 'load: 1,000 concurrent dispatches to one conversation on Node', command: [...node, 'bench/node/load.ts'] },
  large: {
    what: 'large values: 20 MB through spill and reassembly vs raw chunks in the same SQLite',
    command: [...node, 'bench/node/large-values.ts'],
  },
  wrangler: {
    what: 'workerd CPU per turn, 200 conversations and 250 sends to one on wrangler dev, vs a bare Worker + Durable Object and the Agents SDK',
    command: [...node, 'bench/node/wrangler-cpu.ts'],
  },
  workers: {
    what: 'the Cloudflare target in workerd',
    command: [...node, 'node_modules/vitest/vitest.mjs', 'run', '-c', 'bench/workers/vitest.config.ts'],
    env: { WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false', XDG_CONFIG_HOME: `${root}.xdg` },
  },
};

function run(name: string): Promise<number> {
  const bench = BENCHMARKS[name]!;
  console.log(`\n━━ ${name}: ${bench.what} ━━`);
  return new Promise((resolve, reject) => {
    const child = spawn(bench.command[0]!, bench.command.slice(1), {
      cwd: root,
      env: { ...process.env, ...bench.env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let pending = '';
    child.stdout.on('data', (chunk: Buffer) => {
      process.stdout.write(chunk);
      pending += chunk.toString('utf8');
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        const at = line.indexOf(ROWS_MARKER);
        if (at === -1) continue;
        const { group, method, rows } = JSON.parse(line.slice(at + ROWS_MARKER.length));
        saveRows(group, method, rows);
      }
    });
    child.on('error', reject);
    child.on('close', (code) => resolve(code ?? 1));
  });
}

const asked = process.argv.slice(2);
const unknown = asked.filter((name) => !(name in BENCHMARKS));
if (unknown.length > 0) {
  console.error(`bench: unknown benchmark ${unknown.join(', ')} (known: ${Object.keys(BENCHMARKS).join(', ')})`);
  process.exit(2);
}
const started = new Date().toISOString();
const failed: string[] = [];
for (const name of asked.length > 0 ? asked : Object.keys(BENCHMARKS)) {
  if ((await run(name)) !== 0) failed.push(name);
}

const groups = loadGroups().filter((group) => group.savedAt >= started);
console.log('\n━━ All figures of this run ━━\n');
for (const group of groups) console.log(`**${group.group}** (${group.method})\n\n${markdownTable(group.rows)}\n`);
const missed = groups.flatMap((group) => group.rows.filter((row) => !row.met).map((row) => `${group.group}: ${row.figure}`));
console.log(missed.length === 0 ? 'Every target met.' : `Targets missed (${missed.length}):\n${missed.map((m) => `  - ${m}`).join('\n')}`);
if (failed.length > 0) {
  console.error(`\nbench: ${failed.join(', ')} failed (see their output above)`);
  process.exit(1);
}
