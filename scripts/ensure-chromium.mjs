// The page test drives the example app in Debian's Chromium (playwright-core, no browser download).
// `npm test` installs it when missing, so a fresh machine needs nothing else.
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

const CHROMIUM = '/usr/bin/chromium';
if (!existsSync(CHROMIUM)) {
  const root = process.getuid?.() === 0;
  const prefix = root ? [] : ['sudo'];
  console.error(`[flue] ${CHROMIUM} is missing; installing Debian's chromium package for the page test…`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [
    ['apt-get', 'update', '-qq'],
    ['apt-get', 'install', '-y', '-qq', 'chromium'],
  ]) {
    const [command, ...rest] = [...prefix, ...args];
    const result = spawnSync(command, rest, { stdio: 'inherit', env });
    if (result.status !== 0) {
      console.error(`[flue] Could not install chromium (${args.join(' ')} failed). Install it with: sudo apt-get install chromium`);
      process.exit(1);
    }
  }
}
