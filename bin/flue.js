#!/usr/bin/env node
// The `flue` command. An installed package runs the built CLI (dist/cli.js); a checkout of the
// repository runs its TypeScript sources directly through Node's type stripping (Node >= 22.18
// strips types by default for files outside node_modules), so they never wait for a build.
import { existsSync } from 'node:fs';

const [major, minor] = process.versions.node.split('.').map(Number);
const modern = major > 22 || (major === 22 && minor >= 19);
const args = process.argv.slice(2);
// `flue init` only copies files, so it also runs on an older system Node: that is how a new
// project starts (`npx flue-workers init my-app`), and the project then pins Node 22 for the rest.
const portable = args[0] === 'init' || args[0] === '--help' || args[0] === '-h' || args[0] === '--version' || args[0] === '-v';
const sources = new URL('../src/build/cli.ts', import.meta.url);
const built = new URL('../dist/cli.js', import.meta.url);
const fromSources = modern && existsSync(sources);
if (!modern && !(portable && existsSync(built))) {
  process.stderr.write(
    `[flue] Node.js 22.19 or newer is required (this is ${process.version}).\n` +
      '       In a project made by `flue init`, run commands through npm (`npm run dev`, `npx flue …`):\n' +
      '       they use the node@22 the project installs as a dev dependency.\n',
  );
  process.exit(1);
}

// Older accepted 22.x releases print ExperimentalWarning for type stripping / node:sqlite.
const emitWarning = process.emitWarning;
process.emitWarning = function (warning, ...rest) {
  const type = typeof rest[0] === 'string' ? rest[0] : rest[0]?.type;
  if (type === 'ExperimentalWarning' || warning?.name === 'ExperimentalWarning') return;
  return emitWarning.call(this, warning, ...rest);
};

const { main } = await import(fromSources ? sources.href : built.href);
const code = await main(args);
process.exit(code);
