/**
 * Where the CPU of a side-by-side scenario goes: runs its child (by default the fan-out, 200
 * one-turn conversations 8 at a time; `cold` for (c), process start to the first settled reply)
 * of ours or the floor under `node --cpu-prof`, with the scripted server in this process, and
 * prints self time by source group and by function. Not part of `npm run bench`.
 *
 *   npx node bench/node/side-by-side-profile.ts                 # ours, fan-out
 *   npx node bench/node/side-by-side-profile.ts floor           # the floor, for comparison
 *   npx node bench/node/side-by-side-profile.ts ours cold       # (c) cold start
 */
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { resultsDir } from '../results.ts';
import { startSideBySideServer } from './side-by-side-server.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

const runtime = process.argv[2] === 'floor' ? 'floor' : 'ours';
const scenario = process.argv[3] === 'cold' ? 'cold' : 'fanout';
const child = fileURLToPath(new URL('./side-by-side-child.ts', import.meta.url));
const out = path.join(resultsDir, `side-by-side-${runtime}-${scenario}`);
const server = await startSideBySideServer();
try {
  await new Promise<void>((resolve, reject) => {
    const proc = spawn(
      process.execPath,
      [
        '--disable-warning=ExperimentalWarning',
        '--cpu-prof',
        '--cpu-prof-interval=200',
        `--cpu-prof-dir=${out}`,
        child,
        runtime,
        scenario,
        server.url,
      ],
      {
        stdio: ['ignore', 'inherit', 'inherit'],
      },
    );
    proc.on('error', reject);
    proc.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`child exited ${code}`))));
  });
} finally {
  await server.close();
}
const file = readdirSync(out)
  .filter((name) => name.endsWith('.cpuprofile'))
  .sort()
  .at(-1)!;
const profile = JSON.parse(readFileSync(path.join(out, file), 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const self = new Map<number, number>();
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000));
const group = (url: string) => {
  if (url === '') return '(native / GC / idle)';
  // Before the dist test: Node's own TypeScript stripper lives at node:internal/deps/amaro/dist.
  if (url.startsWith('node:')) return 'node built-ins';
  if (url.includes('/dist/') && !url.includes('node_modules/')) return 'our runtime (dist)';
  if (url.includes('/src/')) return 'our runtime (src)';
  const pkg = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/)?.[1];
  if (pkg !== undefined) return pkg;
  return path.basename(url);
};
const sums = (key: (node: ProfileNode) => string) => {
  const map = new Map<string, number>();
  for (const [id, ms] of self) {
    const node = byId.get(id)!;
    map.set(key(node), (map.get(key(node)) ?? 0) + ms);
  }
  return [...map].sort((a, b) => b[1] - a[1]);
};
const total = [...self.values()].reduce((a, b) => a + b, 0);
console.log(`${runtime}: ${total.toFixed(0)} ms sampled; profile in ${path.join(out, file)}`);
console.log('self time by source:');
for (const [name, ms] of sums((node) => group(node.callFrame.url)).slice(0, 12))
  console.log(`  ${ms.toFixed(0).padStart(6)} ms  ${((ms / total) * 100).toFixed(1).padStart(5)}%  ${name}`);
console.log('self time by function:');
for (const [name, ms] of sums(
  (node) => `${node.callFrame.functionName || '(anonymous)'} ${path.basename(node.callFrame.url)}:${node.callFrame.lineNumber + 1}`,
).slice(0, 30)) {
  console.log(`  ${ms.toFixed(0).padStart(6)} ms  ${((ms / total) * 100).toFixed(1).padStart(5)}%  ${name}`);
}
