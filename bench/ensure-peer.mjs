// Installs a benchmark peer (a folder under bench/ with its own package.json and
// package-lock.json, such as bench/original or bench/agents-sdk) when its node_modules is missing
// or holds other versions than the pinned ones. A no-op once installed.
//
//   node bench/ensure-peer.mjs original agents-sdk
//
// `npm ci` reproduces the committed lockfile exactly.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const bench = dirname(fileURLToPath(import.meta.url));

function installedVersion(dir, name) {
  try {
    return JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return undefined;
  }
}

/** Runs `npm ci` in bench/<peer> unless every pinned dependency is installed at its version. */
export function ensurePeer(peer) {
  const dir = join(bench, peer);
  const wanted = Object.entries(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).dependencies);
  const stale = wanted.filter(([name, version]) => installedVersion(dir, name) !== version);
  if (stale.length === 0) return;
  console.error(`[bench] installing ${stale.map(([name, version]) => `${name}@${version}`).join(', ')} into bench/${peer}/node_modules …`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const result = spawnSync(npm, ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, stdio: 'inherit' });
  if (result.status !== 0 || wanted.some(([name, version]) => installedVersion(dir, name) !== version)) {
    console.error(`[bench] could not install bench/${peer}; run \`npm ci\` in bench/${peer} and retry.`);
    process.exit(1);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) for (const peer of process.argv.slice(2)) ensurePeer(peer);
