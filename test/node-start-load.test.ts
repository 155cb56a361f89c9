import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

// What a Node process loads for `import '@flue/runtime'` and `@flue/runtime/node` (the built dist/,
// what users run): every module file costs a cold start its resolve, read, compile and link, so
// the parts an agent may not use load on first use.
const root = fileURLToPath(new URL('..', import.meta.url));

const PROBE = `
import { registerHooks } from 'node:module';
const loaded = [];
registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
const runtime = await import('@flue/runtime');
await import('@flue/runtime/node');
const atStart = [...loaded];
const builtinsAtStart = process.moduleLoadList.filter((name) => /^NativeModule (sqlite|child_process|internal[/]deps[/]undici[/]undici)$/.test(name));
const sandbox = runtime.createVirtualBash({ files: { 'a.txt': 'one\\ntwo\\n' } });
const first = await sandbox.exec('cat a.txt | tr a-z A-Z');
const loadedByFirst = loaded.slice(atStart.length);
const afterFirst = loaded.length;
const second = await sandbox.exec('wc -l a.txt');
console.log(JSON.stringify({ atStart, builtinsAtStart, first, loadedByFirst, second, loadedBySecond: loaded.length - afterFirst }));
`;

let probe: {
  atStart: string[];
  builtinsAtStart: string[];
  first: { stdout: string; exitCode: number };
  loadedByFirst: string[];
  second: { stdout: string };
  loadedBySecond: number;
};

beforeAll(async () => {
  const { buildDist, isStale } = await import('../scripts/build-dist.mjs');
  if (isStale()) await buildDist();
  probe = runProbe(PROBE) as typeof probe;
}, 90_000);

/** Runs `source` in a fresh Node process and answers the JSON it prints; it must print nothing else. */
function runProbe(source: string): unknown {
  const run = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', source], {
    cwd: root,
    encoding: 'utf8',
    // Plain Node: the package's exports resolve to dist/, not the sources.
    env: { ...process.env, NODE_OPTIONS: '' },
    timeout: 60_000,
  });
  expect(run.stderr).toBe('');
  return JSON.parse(run.stdout);
}

it('importing the runtime loads a few files of ours, no Hono module file (the routers carry it) and not the sandbox shell', () => {
  const ours = probe.atStart.filter((url) => new URL(url).pathname.startsWith(`${root}dist/`));
  expect(ours.map((url) => url.slice(url.lastIndexOf('/') + 1))).toEqual(expect.arrayContaining(['index.js', 'node.js']));
  // index.js, node.js and the one chunk of the code every entry and every lazily loaded part
  // shares. Dozens once, when every combination of entries had its own chunk.
  expect(ours.length).toBeLessThanOrEqual(3);
  // Loaded on first use: compaction's summarization and task runs (by the first response that uses
  // them), a harness's model work (its first operation), a conversation's export and import (the
  // first exportConversation() or fork()), the MCP client (the first connection), approvals (the
  // first listApprovals() or decideApproval()), SKILL.md parsing (the first workspace skill), the
  // sandbox tools' calls (the first call).
  const lazy =
    /\/dist\/(?:conversation-summary|task-run|harness-scratch|conversation-transfer|connection|approval-history|frontmatter|tool-runs)-[^/]*\.js$/;
  expect(ours.filter((url) => lazy.test(url))).toEqual([]);
  // The Node server (HTTP, schedules, cron) loads with the first runFlueServer(), a local sandbox's
  // driver with its first sandbox.
  expect(ours.filter((url) => /\/dist\/(?:server-run|local-driver)-[^/]*\.js$/.test(url))).toEqual([]);
  expect(probe.atStart.filter((url) => url.includes('/node_modules/hono/'))).toEqual([]);
  expect(probe.atStart.filter((url) => /\/dist\/shell-[^/]*\.js$/.test(url))).toEqual([]);
});

it('importing the runtime does not load node:sqlite, node:child_process or the fetch stack before they are used', () => {
  expect(probe.builtinsAtStart).toEqual([]);
});

it("a virtual sandbox's first exec loads the shell and runs; later execs load nothing more", () => {
  expect(probe.first).toMatchObject({ stdout: 'ONE\nTWO\n', exitCode: 0 });
  expect(probe.loadedByFirst.filter((url) => /\/dist\/shell-[^/]*\.js$/.test(url))).toHaveLength(1);
  expect(probe.second.stdout).toBe('2 a.txt\n');
  expect(probe.loadedBySecond).toBe(0);
});

// A start and its first exchange, in a process of their own: Node builds its Web Crypto object
// as modules of their own on first use, a cold-start cost the runtime's ids need not pay
// (node:crypto's random source, which the process's HTTP stack loads anyway, serves them). And a
// test run's global setup imports `@flue/runtime/testing` for the scripted model server alone:
// under vitest every module it loads is transformed first, and the provider SDKs are hundreds of
// modules (seconds of a fresh project's `npm test`), so a scripted provider loads only its own.
const EXCHANGE_PROBE = `
import { registerHooks } from 'node:module';
const loaded = [];
registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
const sdks = () => [...new Set(loaded.flatMap((url) => url.match(/\\/node_modules\\/(@anthropic-ai\\/sdk|openai)\\//)?.[1] ?? []))];
const { scriptedProvider, startScriptedModelServer } = await import('@flue/runtime/testing');
const server = await startScriptedModelServer();
const sdksAtImport = sdks();
const { init, useModel } = await import('@flue/runtime');
const { start } = await import('@flue/runtime/node');
server.script({ text: 'Hello back.' });
function Greeter() {
  useModel('scripted/model');
  return 'Greet.';
}
const provider = scriptedProvider({ baseUrl: server.url, id: 'scripted', models: ['model'], api: 'anthropic-messages' });
const flue = await start({ agents: [Greeter], providers: [provider] });
const handle = init(Greeter, { id: 'probe' });
const reply = await handle.read(await handle.dispatch('Hello'));
await flue.stop();
await server.close();
const builtins = process.moduleLoadList.filter((name) => /^NativeModule (internal[/]crypto[/]webcrypto|fs[/]promises)$/.test(name));
console.log(JSON.stringify({ text: reply.text, builtins, sdksAtImport, sdks: sdks() }));
`;

describe('a start and its first exchange with a scripted provider', () => {
  let exchange: { text: string; builtins: string[]; sdksAtImport: string[]; sdks: string[] };
  beforeAll(() => {
    exchange = runProbe(EXCHANGE_PROBE) as typeof exchange;
  }, 60_000);

  it("load neither Node's Web Crypto object nor node:fs/promises", () => {
    expect(exchange.text).toBe('Hello back.');
    expect(exchange.builtins).toEqual([]);
  });

  it("importing the testing entry loads no provider SDK; a scripted provider loads its own wire format's", () => {
    expect(exchange.sdksAtImport).toEqual([]);
    expect(exchange.sdks).toEqual(['@anthropic-ai/sdk']);
  });
});

// Opening a database loads node:sqlite, which Node 22 announces as experimental on stderr: the
// store is the runtime's choice, so a user's start (and test run) must not print that; a warning
// of anyone else's still prints.
const SQLITE_PROBE = `
const { sqlite } = await import('@flue/runtime/node');
const db = sqlite();
db.migrate();
db.close();
process.emitWarning('a warning of the application', 'ExperimentalWarning');
console.log(JSON.stringify({ sqliteLoaded: process.moduleLoadList.includes('NativeModule sqlite') }));
`;

it('opening a database prints no node:sqlite experimental warning, and other warnings still print', () => {
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', SQLITE_PROBE], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
    timeout: 60_000,
  });
  expect(run.status).toBe(0);
  expect(JSON.parse(run.stdout)).toEqual({ sqliteLoaded: true });
  expect(run.stderr).not.toContain('SQLite');
  expect(run.stderr).toContain('ExperimentalWarning: a warning of the application');
});
