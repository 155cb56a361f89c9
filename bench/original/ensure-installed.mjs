// Installs the original runtime peer (bench/original/package-lock.json) when it is missing or is
// not the pinned version. `npm run bench:original` runs this first; it is a no-op once installed.
//
//   node bench/original/ensure-installed.mjs
//
// `npm ci` reproduces the committed lockfile exactly. Install scripts of @google/genai and
// protobufjs (pulled in by pi-ai 0.83) are denied in package.json's allowScripts; the benchmark
// needs neither.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const wanted = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')).dependencies['@flue/runtime'];

function installedVersion() {
  try {
    return JSON.parse(readFileSync(join(here, 'node_modules/@flue/runtime/package.json'), 'utf8')).version;
  } catch {
    return undefined;
  }
}

const found = installedVersion();
if (found !== wanted) {
  console.error(
    `[bench] installing the original @flue/runtime ${wanted} into bench/original/node_modules` +
      (found ? ` (found ${found})` : '') +
      ' …',
  );
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const result = spawnSync(npm, ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: here, stdio: 'inherit' });
  if (result.status !== 0 || installedVersion() !== wanted) {
    console.error('[bench] could not install the original runtime; run `npm ci` in bench/original and retry.');
    process.exit(1);
  }
}
