/**
 * The built Node server end to end: `flue build --target node` on a fixture project, then
 * `node dist/server.mjs` as a real process on a free port with a sqlite file, answering over HTTP
 * through the fixture's createAgentRouter mount, with models served by the scripted model server.
 * A server SIGKILLed mid-response and started again on the same file settles the reply once; one
 * sent SIGTERM mid-response drains it to its settlement before it exits.
 */
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModelServer, type ScriptedModelServer } from '@flue/runtime/testing';
import { packageRoot } from '../../src/build/package-root.ts';
import { removeDir, tempProject } from '../../src/build/test-project.ts';
import { inspectDb, poll, streamOf } from '../crash/harness.ts';
import { expectSettledExactlyOnce } from '../crash/suite.ts';
import { freePort } from '../support/wrangler-dev.ts';

const NODE_BIN = (() => {
  const pinned = path.join(packageRoot(), 'node_modules/.bin/node');
  return existsSync(pinned) ? pinned : process.execPath;
})();

interface Server {
  base: string;
  proc: ChildProcessWithoutNullStreams;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

let model: ScriptedModelServer;
let project: string;
const running = new Set<Server>();

beforeAll(async () => {
  model = await startScriptedModelServer();
  project = tempProject('node-server');
  cpSync(path.join(packageRoot(), 'test/e2e/fixtures/node-app'), project, { recursive: true });
  // The CLI bundles the runtime from this checkout's sources (the flue-source condition).
  const built = spawnSync(
    NODE_BIN,
    ['--conditions=flue-source', path.join(packageRoot(), 'bin/flue.js'), 'build', '--target', 'node', '--json'],
    {
      cwd: project,
      encoding: 'utf8',
    },
  );
  if (built.status !== 0) throw new Error(`flue build --target node failed:\n${built.stdout}\n${built.stderr}`);
  expect(JSON.parse(built.stdout)).toEqual({
    target: 'node',
    agents: [{ identity: 'Assistant', exportName: 'Assistant', file: 'src/agents/assistant.ts' }],
    db: null,
    schedules: 'src/schedules.ts',
    crons: ['* * * * *'],
  });
}, 120_000);

afterEach(async () => {
  for (const server of running) server.proc.kill('SIGKILL');
  await Promise.all([...running].map((s) => s.exited));
  model.reset();
});

afterAll(async () => {
  await model?.close();
  if (project !== undefined) removeDir(project);
});

async function startServer(env: Record<string, string>): Promise<Server> {
  const port = env.PORT ?? String(await freePort());
  const proc = spawn(NODE_BIN, [path.join(project, 'dist/server.mjs')], {
    cwd: project,
    env: { ...process.env, HOST: '127.0.0.1', PORT: port, FLUE_SCRIPTED_MODEL_URL: model.url, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  proc.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
  proc.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => {
      running.delete(server);
      resolve({ code, signal });
    }),
  );
  const server: Server = { base: `http://127.0.0.1:${port}`, proc, output: () => output, exited };
  running.add(server);
  await poll(`the server to listen (output so far:\n${output})`, () => {
    if (proc.exitCode !== null) throw new Error(`the server exited early:\n${output}`);
    return output.includes('Listening on');
  });
  return server;
}

async function post(server: Server, id: string, body: unknown): Promise<{ submissionId: string; uid: string }> {
  const response = await fetch(`${server.base}/agents/assistant/${id}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status, await response.clone().text()).toBe(202);
  return (await response.json()) as { submissionId: string; uid: string };
}

type Chunk = { type: string; submissionId?: string; outcome?: string; delta?: string; snapshot?: { messages: unknown[] } };

/** Reads the updates view as server-sent events until `until` holds for the chunks so far. */
async function readSse(server: Server, id: string, until: (chunks: Chunk[]) => boolean): Promise<Chunk[]> {
  const controller = new AbortController();
  const response = await fetch(`${server.base}/agents/assistant/${id}?view=updates&offset=-1&live=sse`, { signal: controller.signal });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toContain('text/event-stream');
  const chunks: Chunk[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  const reader = response.body!.getReader();
  try {
    while (!until(chunks)) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`the event stream ended early: ${JSON.stringify(chunks)}`);
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const name = /^event: ?(.*)$/m.exec(event)?.[1];
        const data = event
          .split('\n')
          .filter((line) => line.startsWith('data:'))
          .map((line) => line.replace(/^data: ?/, ''))
          .join('\n');
        if (name === 'data' && data !== '') chunks.push(...(JSON.parse(data) as Chunk[]));
      }
    }
  } finally {
    controller.abort();
  }
  return chunks;
}

async function plainUpdates(server: Server, id: string): Promise<Chunk[]> {
  const response = await fetch(`${server.base}/agents/assistant/${id}?view=updates&offset=-1`);
  expect(response.status).toBe(200);
  return (await response.json()) as Chunk[];
}

const settlements = (chunks: Chunk[], submissionId: string) =>
  chunks.filter((c) => c.type === 'submission-settled' && c.submissionId === submissionId);

describe('flue build --target node', () => {
  it('serves app.ts over HTTP: a message posted to the router mount is answered and settles once', async () => {
    const dir = tempProject('node-server-db');
    try {
      const db = path.join(dir, 'flue.db');
      model.script({ text: 'Hello from Node.' });
      const server = await startServer({ FLUE_DB: db });
      expect(server.output()).toContain('1 schedule');
      expect(server.output()).not.toContain('ExperimentalWarning');
      expect(await (await fetch(`${server.base}/health`)).text()).toBe('ok');

      const receipt = await post(server, 'greet', { kind: 'user', body: 'Say hello.' });
      const chunks = await readSse(server, 'greet', (cs) => settlements(cs, receipt.submissionId).length > 0);
      expect(settlements(chunks, receipt.submissionId)).toEqual([expect.objectContaining({ outcome: 'completed' })]);
      expect(
        chunks
          .filter((c) => c.type === 'message-delta')
          .map((c) => c.delta)
          .join(''),
      ).toBe('Hello from Node.');
      expect(model.requests.map((r) => r.messages.at(-1)?.content)).toEqual(['Say hello.']);

      // SIGTERM drains, then exits with the signal's conventional code.
      server.proc.kill('SIGTERM');
      expect(await server.exited).toEqual({ code: 143, signal: null });
      expectSettledExactlyOnce(inspectDb(db, streamOf('Assistant', 'greet')), [receipt.submissionId]);
    } finally {
      removeDir(dir);
    }
  });

  it('SIGTERM while the model streams: the server stays up until the reply settles on its first attempt, then exits', async () => {
    const dir = tempProject('node-server-db');
    try {
      const db = path.join(dir, 'flue.db');
      const words = ['Draining ', 'finishes ', 'what ', 'was ', 'started.'];
      model.script({ text: words, chunkDelayMs: 300 });
      const server = await startServer({ FLUE_DB: db });
      const receipt = await post(server, 'drain', { kind: 'user', body: 'Take your time.' });
      // The first word has reached the log: the reply is mid-stream when the signal arrives.
      await readSse(server, 'drain', (cs) => cs.some((c) => c.type === 'message-delta'));
      expect(inspectDb(db, streamOf('Assistant', 'drain')).submissions).toMatchObject([{ status: 'running', outcome: null }]);
      server.proc.kill('SIGTERM');
      expect(await server.exited).toEqual({ code: 143, signal: null });
      expect(server.output()).toContain('SIGTERM: draining');

      const view = inspectDb(db, streamOf('Assistant', 'drain'));
      expectSettledExactlyOnce(view, [receipt.submissionId]);
      expect(view.submissions[0]!.attemptCount).toBe(1);
      expect(model.requests).toHaveLength(1);
      // The whole reply was written before the exit, not cut off where the signal found it.
      const replies = view.records.filter((r) => r.record.type === 'assistant_completed');
      expect(replies.map((r) => (r.record.message.content as { type: string; text?: string }[]).map((p) => p.text ?? '').join(''))).toEqual(
        [words.join('')],
      );
    } finally {
      removeDir(dir);
    }
  });

  it('a server SIGKILLed while the model streams recovers on restart, and the reply settles exactly once', async () => {
    const dir = tempProject('node-server-db');
    try {
      const db = path.join(dir, 'flue.db');
      const stream = streamOf('Assistant', 'crash');
      // The first attempt's model stream starts and then never finishes; the retry answers.
      model.script({ text: ['The answer ', 'is being ', 'written'], hangAfterChunks: 4 }, { text: 'The answer is 42.' });
      const first = await startServer({ FLUE_DB: db });
      const receipt = await post(first, 'crash', { kind: 'user', body: 'What is the answer?' });
      await model.waitForRequests(1, 30_000);
      await poll('the first attempt to start', () => inspectDb(db, stream).submissions[0]?.attemptCount === 1);

      first.proc.kill('SIGKILL');
      expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
      const interrupted = inspectDb(db, stream);
      expect(interrupted.submissions).toMatchObject([{ id: receipt.submissionId, status: 'running', outcome: null }]);
      expect(interrupted.records.filter((r) => r.record.type === 'submission_settled')).toEqual([]);

      // Same database file, same port: recovery drives the unsettled submission at startup.
      const second = await startServer({ FLUE_DB: db, PORT: new URL(first.base).port });
      const chunks = await readSse(second, 'crash', (cs) => settlements(cs, receipt.submissionId).length > 0);
      expect(settlements(chunks, receipt.submissionId)).toEqual([expect.objectContaining({ outcome: 'completed' })]);
      expect(model.requests).toHaveLength(2);
      expect(model.requests[1]!.messages.map((m) => `${m.role}: ${m.content}`)).toEqual(['user: What is the answer?']);

      // Read again over HTTP after the fact: still one settlement, and the reply is the retry's.
      const after = await plainUpdates(second, 'crash');
      expect(settlements(after, receipt.submissionId)).toHaveLength(1);
      const history = (await (await fetch(`${second.base}/agents/assistant/crash`)).json()) as {
        messages: { role: string; parts: { type: string; text?: string }[] }[];
      };
      const assistant = history.messages.filter((m) => m.role === 'assistant');
      expect(
        assistant.map((m) =>
          m.parts
            .filter((p) => p.type === 'text')
            .map((p) => p.text)
            .join(''),
        ),
      ).toEqual(['The answer is 42.']);

      const view = inspectDb(db, stream);
      expectSettledExactlyOnce(view, [receipt.submissionId]);
      expect(view.submissions[0]!.attemptCount).toBe(2);
    } finally {
      removeDir(dir);
    }
  });

  it("runs schedules.ts and app.ts's scheduled() on the wrangler crons: each tick dispatches its signal, which the agent answers", async () => {
    const dir = tempProject('node-server-db');
    try {
      const db = path.join(dir, 'flue.db');
      model.script({ text: 'Done.' }, { text: 'Done.' });
      const server = await startServer({ FLUE_DB: db, FIXTURE_CRON: '* * * * *', FIXTURE_APP_CRON: '1' });
      expect(server.output()).toContain('1 schedule, 1 cron for app.ts scheduled()');
      // The next minute boundary (up to 60 s away) fires both: wait for each conversation's
      // settlement, with room for a loaded machine after the tick.
      for (const id of ['scheduled', 'app-cron']) {
        await poll(`the ${id} conversation`, () => inspectDb(db, streamOf('Assistant', id)).submissions.length > 0, 100_000, 250);
        const chunks = await readSse(server, id, (cs) => cs.some((c) => c.type === 'submission-settled'));
        expect(chunks.filter((c) => c.type === 'submission-settled')).toEqual([expect.objectContaining({ outcome: 'completed' })]);
      }
      const prompts = model.requests.map((r) => r.messages.at(-1)!.content).sort();
      expect(prompts).toHaveLength(2);
      expect(prompts[0]).toContain('Run the app cron.');
      expect(prompts[1]).toContain('Write the summary.');
      for (const prompt of prompts) {
        expect(prompt).toContain('type="schedule"');
        expect(prompt).toContain('cron="* * * * *"');
      }
    } finally {
      removeDir(dir);
    }
  }, 130_000);
});
