/**
 * A deploy mid-turn on real workerd (durability.md §6.5): `flue dev` serves a project whose agent
 * has four conversations each blocked inside a tool call; the agent module is then edited (tools
 * renamed, re-stepped and re-schemed, the subagent removed, the function renamed with its
 * `agentName` kept), the reload drops the running Durable Objects, and each conversation recovers
 * on the new code. The outcomes are read through `read()` on the receipts taken before the edit.
 *
 * The model is a scripted server of this test: a conversation's first turn calls the tool its
 * message names (`/tool <name> <JSON>`, as flue dev's offline model reads it) and the next answers
 * with the content of the tool result it was given. Tools report each step they run to a loopback
 * server of this test, which never answers the requests that block them.
 *
 * The project lives under the OS temp dir with a node_modules symlink to this checkout: wrangler
 * dev ignores file changes under any `node_modules` path.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { type Server, createServer } from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DispatchReceipt } from '@flue/runtime';
import { type RecordedRequest, type ScriptedModelServer, startScriptedModelServer } from '@flue/runtime/testing';
import { offlineModel } from '../../src/build/offline-model.ts';
import { packageRoot } from '../../src/build/package-root.ts';
import { offlineEnv } from '../../src/build/test-project.ts';
import { freePort } from '../support/wrangler-dev.ts';

/** What the tools reported, as `<conversation>/<step>/<version>`, in arrival order. */
const ran: string[] = [];
let model: ScriptedModelServer;
let side: Server;
let sideUrl: string;
let dir: string;
let dev: ChildProcess | undefined;
let base: string;
/** flue dev's output, for a failure's message. */
let output = '';

/**
 * The agent module before (`a`) and after (`b`) the deploy. In `a` the steps marked to block wait
 * on a request the side server never answers. In `b`: `fulfil`'s `charge` step is renamed `bill`
 * and a `notify` step added; `pack` is renamed `box`; `label` requires a `priority`; the `helper`
 * subagent is gone; `Desk` is renamed `FrontDesk` with `agentName` kept; the model is another.
 */
function deskModule(version: 'a' | 'b'): string {
  const b = version === 'b';
  return `'use agent';
import * as v from 'valibot';
import { defineSubagent, defineTool, useModel, useSubagent, useTool } from '@flue/runtime';

async function work(key: string, name: string, block = false): Promise<string> {
  const answer = await fetch('${sideUrl}/' + (block && '${version}' === 'a' ? 'block' : 'ran') + '/' + key + '/' + name + '/${version}');
  await answer.text();
  return name + '-${version}';
}

const fulfil = defineTool({
  name: 'fulfil',
  description: 'Fulfils an order.',
  input: v.object({ order: v.string() }),
  durable: true,
  async run({ step }) {
    const done: string[] = [];
    for (const name of ${JSON.stringify(b ? ['reserve', 'bill', 'ship', 'notify'] : ['reserve', 'charge', 'ship'])}) {
      done.push(await step.do(name, () => work('fulfil', name, name === 'ship')));
    }
    return done.join('+');
  },
});

const pack = defineTool({
  name: '${b ? 'box' : 'pack'}',
  description: 'Packs an order.',
  input: v.object({ order: v.string() }),
  durable: true,
  run: async ({ step }) => step.do('wrap', () => work('pack', 'wrap', true)),
});

const label = defineTool({
  name: 'label',
  description: 'Labels an order.',
  input: v.object({ order: v.string()${b ? ', priority: v.number()' : ''} }),
  durable: true,
  run: async ({ step }) => step.do('print', () => work('label', 'print', true)),
});

const wait = defineTool({ name: 'wait', description: 'Waits.', input: v.object({}), run: () => work('helper', 'wait', true) });
const helper = defineSubagent({ name: 'helper', description: 'Waits for things.', agent() { useTool(wait); return 'You wait.'; } });

export function ${b ? 'FrontDesk' : 'Desk'}() {
  useModel('anthropic/${b ? 'claude-sonnet-4-5' : 'claude-haiku-4-5'}');
  useTool(fulfil);
  useTool(pack);
  useTool(label);
  ${b ? '' : 'useSubagent(helper);'}
  return 'You run the desk.';
}
${b ? "FrontDesk.agentName = 'Desk';" : ''}
`;
}

const APP = `import { Hono } from 'hono';
import { init } from '@flue/runtime';
import * as desk from './agents/desk.ts';

// Whatever the agent module exports: a deploy renames its function.
const [Desk] = Object.values(desk) as Parameters<typeof init>[0][];
const app = new Hono();
app.get('/', (c) => c.text(Desk!.name));
app.post('/desk/:id', async (c) => c.json(await init(Desk!, { id: c.req.param('id') }).dispatch(await c.req.text())));
app.post('/desk/:id/read', async (c) => {
  try {
    return c.json({ reply: (await init(Desk!, { id: c.req.param('id') }).read(await c.req.json())).text });
  } catch (error) {
    return c.json({ error: (error as Error).message }, 502);
  }
});
export default app;
`;

const WRANGLER = `{
  "name": "deploys",
  "compatibility_date": "2026-08-01",
  "compatibility_flags": ["nodejs_compat"],
  "migrations": [{ "tag": "v1", "new_sqlite_classes": ["FlueDeskAgent"] }]
}
`;

const INTERRUPTED = '{"type":"interrupted","message":"Tool execution was interrupted before completion. The outcome is unknown."}';

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; flue dev said:\n${output}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function agentName(): Promise<string | undefined> {
  try {
    const res = await fetch(`${base}/`, { signal: AbortSignal.timeout(5_000) });
    return res.ok ? await res.text() : undefined;
  } catch {
    return undefined;
  }
}

/** Calls the tool the conversation's message names; once given a tool result, answers with it. */
function answer(request: RecordedRequest) {
  const result = request.messages.find((message) => message.role === 'tool');
  return result === undefined ? offlineModel(request) : { text: result.content };
}

beforeAll(async () => {
  model = await startScriptedModelServer({ fallback: answer });
  side = createServer((req, res) => {
    const [, kind, ...rest] = (req.url ?? '').split('/');
    ran.push(rest.join('/'));
    // A blocked step's request is never answered: the tool hangs until the reload drops it.
    if (kind !== 'block') res.end('ok');
  });
  await new Promise<void>((resolve) => side.listen(0, '127.0.0.1', resolve));
  sideUrl = `http://127.0.0.1:${(side.address() as { port: number }).port}`;

  dir = mkdtempSync(path.join(os.tmpdir(), 'flue-deploys-'));
  mkdirSync(path.join(dir, 'src/agents'), { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'deploys', private: true, type: 'module' }));
  writeFileSync(path.join(dir, 'wrangler.jsonc'), WRANGLER);
  writeFileSync(path.join(dir, 'src/app.ts'), APP);
  writeFileSync(path.join(dir, 'src/agents/desk.ts'), deskModule('a'));
  symlinkSync(path.join(packageRoot(), 'node_modules'), path.join(dir, 'node_modules'));

  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const flue = path.join(packageRoot(), 'bin/flue.js');
  dev = spawn(process.execPath, [flue, 'dev', '--port', String(port), '--', '--var', `FLUE_SCRIPTED_MODEL_URL:${model.url}`], {
    cwd: dir,
    env: offlineEnv(),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  dev.stdout!.on('data', (data: Buffer) => void (output += data.toString()));
  dev.stderr!.on('data', (data: Buffer) => void (output += data.toString()));
  await until('flue dev serving Desk', async () => ((await agentName()) === 'Desk' ? true : undefined), 90_000);
}, 120_000);

afterAll(async () => {
  if (dev?.pid !== undefined && dev.exitCode === null) {
    const exited = new Promise((resolve) => dev!.once('exit', resolve));
    process.kill(-dev.pid, 'SIGINT'); // flue dev, wrangler and workerd
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    if (dev.exitCode === null) process.kill(-dev.pid, 'SIGKILL');
  }
  await new Promise((resolve) => side?.close(resolve));
  await model?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 30_000);

async function dispatch(id: string, message: string): Promise<DispatchReceipt> {
  const res = await fetch(`${base}/desk/${id}`, { method: 'POST', body: message });
  expect(res.status).toBe(200);
  return (await res.json()) as DispatchReceipt;
}

async function read(id: string, receipt: DispatchReceipt): Promise<{ reply?: string; error?: string }> {
  const res = await fetch(`${base}/desk/${id}/read`, {
    method: 'POST',
    body: JSON.stringify(receipt),
    signal: AbortSignal.timeout(60_000),
  });
  return (await res.json()) as { reply?: string; error?: string };
}

it('work blocked in a tool when the agent module changes recovers on the new code, case by case', async () => {
  const receipts = {
    fulfil: await dispatch('fulfil', '/tool fulfil {"order":"o1"}'),
    pack: await dispatch('pack', '/tool pack {"order":"o2"}'),
    label: await dispatch('label', '/tool label {"order":"o3"}'),
    task: await dispatch('task', '/tool task {"agent":"helper","prompt":"/tool wait {}"}'),
  };
  await until('every conversation blocked in its tool', () =>
    ran.filter((entry) => entry.endsWith('/a')).length === 6 ? true : undefined,
  );
  expect(ran).toEqual(
    expect.arrayContaining(['fulfil/reserve/a', 'fulfil/charge/a', 'fulfil/ship/a', 'pack/wrap/a', 'label/print/a', 'helper/wait/a']),
  );

  writeFileSync(path.join(dir, 'src/agents/desk.ts'), deskModule('b'));
  await until('the reload onto the renamed function', async () => ((await agentName()) === 'FrontDesk' ? true : undefined));

  // The reload cut every alarm pass off: each object, constructed again on the new code by the
  // first read, finds its unsettled work and resumes it at once (not at the 30 s backstop).
  const [fulfil, pack, label, task] = await Promise.all([
    read('fulfil', receipts.fulfil),
    read('pack', receipts.pack),
    read('label', receipts.label),
    read('task', receipts.task),
  ]);
  // Recorded steps replay; the renamed step and the new one run, and the step that was cut runs again.
  expect(fulfil).toEqual({ reply: '"reserve-a+bill-b+ship-b+notify-b"' });
  // A renamed tool: the pending call under its old name gets the interrupted marker.
  expect(pack).toEqual({ reply: INTERRUPTED });
  // A changed schema: the recorded arguments fail validation, as a result the model sees.
  expect(label.reply).toMatch(
    /^Arguments for tool "label" do not match the required schema: .*priority.*Call the tool again with corrected arguments\.$/,
  );
  // A removed subagent whose child was running: the marker names the child conversation.
  expect(JSON.parse(task.reply!)).toEqual({ ...JSON.parse(INTERRUPTED), childConversationId: expect.stringMatching(/^conv_/) });
  // Nothing of the old code's blocked work ran on the new code, and no step ran twice on it.
  expect(ran.filter((entry) => entry.endsWith('/b')).sort()).toEqual(['fulfil/bill/b', 'fulfil/notify/b', 'fulfil/ship/b']);
  // Each recovered turn asked the new model, offered the new tools, and was told the helper is gone.
  const recovered = model.requests.filter((request) => request.messages.some((message) => message.role === 'tool'));
  expect(recovered).toHaveLength(4);
  for (const request of recovered) {
    expect(request.body.model).toBe('claude-sonnet-4-5');
    expect(request.tools.map((tool) => tool.name).sort()).toEqual(['box', 'fulfil', 'label', 'task']);
    expect(request.messages.at(-1)!.content).toContain('The agent "helper" is no longer available.');
  }
}, 120_000);
