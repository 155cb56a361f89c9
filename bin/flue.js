#!/usr/bin/env node
// The `flue` command. The CLI is TypeScript, run through Node's built-in type stripping
// (Node >= 22.18 strips types by default for files outside node_modules).
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
  process.stderr.write(`[flue] Node.js 22.19 or newer is required (this is ${process.version}).\n`);
  process.exit(1);
}

// Older accepted 22.x releases print ExperimentalWarning for type stripping / node:sqlite.
const emitWarning = process.emitWarning;
process.emitWarning = function (warning, ...args) {
  const type = typeof args[0] === 'string' ? args[0] : args[0]?.type;
  if (type === 'ExperimentalWarning' || warning?.name === 'ExperimentalWarning') return;
  return emitWarning.call(this, warning, ...args);
};

const { main } = await import('../src/build/cli.ts');
const code = await main(process.argv.slice(2));
process.exit(code);
