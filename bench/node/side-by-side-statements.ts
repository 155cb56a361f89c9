/**
 * The SQL statements ours runs per exchange: runs a side-by-side child of ours (by default the
 * fan-out, 200 one-turn conversations; `turns` for one conversation's follow-up turns) with every
 * node:sqlite statement counted (statement-counter.ts), and prints them per exchange, most
 * frequent first. Schema and start-up statements show as fractions. Not part of `npm run bench`.
 *
 *   npx node bench/node/side-by-side-statements.ts            # fan-out: new conversations
 *   npx node bench/node/side-by-side-statements.ts turns      # follow-up turns of one conversation
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { resultsDir } from '../results.ts';
import { FANOUT_CONVERSATIONS, TURNS, WARMUP_TURNS } from './side-by-side-script.ts';
import { startSideBySideServer } from './side-by-side-server.ts';

const scenario = process.argv[2] === 'turns' ? 'turns' : 'fanout';
const exchanges = WARMUP_TURNS + (scenario === 'turns' ? TURNS : FANOUT_CONVERSATIONS);
const child = fileURLToPath(new URL('./side-by-side-child.ts', import.meta.url));
const counter = fileURLToPath(new URL('./statement-counter.ts', import.meta.url));
mkdirSync(resultsDir, { recursive: true });
const out = path.join(resultsDir, `statements-${scenario}.json`);
const server = await startSideBySideServer();
try {
  await new Promise<void>((resolve, reject) => {
    const proc = spawn(
      process.execPath,
      ['--disable-warning=ExperimentalWarning', '--import', counter, child, 'ours', scenario, server.url],
      { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, FLUE_BENCH_STATEMENTS: out } },
    );
    proc.on('error', reject);
    proc.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`child exited ${code}`))));
  });
} finally {
  await server.close();
}
const counts = JSON.parse(readFileSync(out, 'utf8')) as [string, number][];
const total = counts.reduce((sum, [, n]) => sum + n, 0);
console.log(`ours, ${scenario}: ${(total / exchanges).toFixed(2)} statements per exchange (${exchanges} exchanges, warm-up included)`);
for (const [sql, n] of counts.sort((a, b) => b[1] - a[1])) {
  if (n / exchanges >= 0.05) console.log(`  ${(n / exchanges).toFixed(2).padStart(6)}  ${sql.slice(0, 120)}`);
}
