/**
 * Large values end to end on real workerd (`flue build`, `wrangler dev`): a tool returning 20 MB
 * of JSON, a 20 MB message and a 30 MB attachment, sent over the agent router. Each either
 * round-trips byte-identically or is refused at admission with 413, and every accepted
 * submission settles completed.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startScriptedModelServer, type ScriptedModelServer } from '@flue/runtime/testing';
import { removeDir, templateCopy, writeFiles } from '../../src/build/test-project.ts';
import { buildProject, startWranglerDev, type DevServer } from '../support/wrangler-dev.ts';
import { expectReduced } from '../support/reduced-text.ts';

/** JSON data of about `bytes` UTF-8 bytes, with quotes, escapes and multi-byte characters. */
function bigOutput(bytes: number): { rows: string[] } {
  const row = 'Zoë said "hi" \\ — naïve café 😀 €\n'.repeat(32);
  const perRow = new TextEncoder().encode(JSON.stringify(row)).byteLength + 1;
  return { rows: Array.from({ length: Math.ceil(bytes / perRow) }, (_, i) => `${row}${i}`) };
}

const HOARD = `'use agent';
import * as v from 'valibot';
import { useModel, useTool } from '@flue/runtime';

${bigOutput.toString()}

export function Hoard() {
  useModel('anthropic/claude-haiku-4-5');
  useTool({
    name: 'dump',
    description: 'Dump data.',
    input: v.object({ bytes: v.number() }),
    run: ({ data }) => ({ output: bigOutput(data.bytes) }),
  });
  return 'Hoard.';
}
`;

/** The agent's router, and a read route that reports the reply and the streamed tool outputs. */
const ROUTES = `
import { createAgentRouter } from '@flue/runtime/routing';
import { Hoard } from './agents/hoard.ts';
app.route('/hoard', createAgentRouter(Hoard));
app.get('/hoard-read/:id/:submission', async (c) => {
  const outputs = [];
  try {
    const reply = await init(Hoard, { id: c.req.param('id') }).read(c.req.param('submission'), {
      onEvent: (chunk) => { if (chunk.type === 'tool-output') outputs.push(chunk.output); },
    });
    return c.json({ text: reply.text, outputs });
  } catch (error) {
    return c.json({ error: String(error) }, 500);
  }
});
`;

let server: ScriptedModelServer;
let project: string;
let dev: DevServer | undefined;
let base: string;

beforeAll(async () => {
  server = await startScriptedModelServer();
  project = templateCopy('e2e-large');
  writeFiles(project, { 'src/agents/hoard.ts': HOARD });
  const app = path.join(project, 'src/app.ts');
  writeFileSync(app, readFileSync(app, 'utf8').replace('export default app;', `${ROUTES}\nexport default app;`));
  const wrangler = path.join(project, 'wrangler.jsonc');
  writeFileSync(
    wrangler,
    readFileSync(wrangler, 'utf8').replace(
      '"new_sqlite_classes": ["FlueHelloAgent"]',
      '"new_sqlite_classes": ["FlueHelloAgent", "FlueHoardAgent"]',
    ),
  );
  buildProject(project);
  dev = await startWranglerDev(project, { FLUE_SCRIPTED_MODEL_URL: server.url });
  base = dev.base;
}, 180_000);

afterAll(async () => {
  await dev?.stop();
  await server?.close();
  if (project) removeDir(project);
}, 30_000);

async function admit(id: string, body: unknown): Promise<Response> {
  return fetch(`${base}/hoard/${id}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

async function readReply(id: string, submissionId: string): Promise<{ text: string; outputs: unknown[] }> {
  const response = await fetch(`${base}/hoard-read/${id}/${submissionId}`);
  const body = (await response.json()) as { text: string; outputs: unknown[]; error?: string };
  expect(response.status, body.error).toBe(200);
  return body;
}

test('a tool returning 20 MB of JSON round-trips to the reader and the history view, and reaches the model reduced', async () => {
  const bytes = 20_000_000;
  const text = JSON.stringify(bigOutput(bytes));
  server.script({ toolCalls: [{ name: 'dump', arguments: { bytes } }] }, { text: 'Dumped.' });
  const admitted = await admit('dump', { kind: 'user', body: 'dump it' });
  expect(admitted.status).toBe(202);
  const { submissionId } = (await admitted.json()) as { submissionId: string };
  const reply = await readReply('dump', submissionId);
  expect(reply.text).toBe('Dumped.');
  expect(JSON.stringify(reply.outputs[0])).toBe(text);
  const history = (await (await fetch(`${base}/hoard/dump`)).json()) as { messages: { parts: { type: string; output?: unknown }[] }[] };
  const part = history.messages.flatMap((m) => m.parts).find((p) => p.type === 'dynamic-tool')!;
  expect(JSON.stringify(part.output)).toBe(text);
  const toolTurns = server.requests.flatMap((request) => request.messages).filter((m) => m.role === 'tool');
  expect(
    toolTurns.map((m) => m.content.length),
    JSON.stringify(server.requests.map((r) => r.messages.map((m) => [m.role, m.content.length]))),
  ).toHaveLength(1);
  // No model window holds it: the model gets its head and tail, told the rest was cut.
  expectReduced(toolTurns[0]!.content, text, 'tool result', 128_000);
}, 300_000);

test('a 20 MB message round-trips to the reader and reaches the model reduced', async () => {
  const body = 'Grüße "aus" Köln 😀\n'.repeat(1_000_000).slice(0, 20_000_000);
  server.script({ text: 'Read it.' });
  const admitted = await admit('long', { kind: 'user', body });
  expect(admitted.status).toBe(202);
  const { submissionId } = (await admitted.json()) as { submissionId: string };
  expect((await readReply('long', submissionId)).text).toBe('Read it.');
  expectReduced(server.requests.at(-1)!.messages.at(-1)!.content, body, 'message', 128_000);
}, 300_000);

test('a 30 MB attachment is refused at admission with 413 and nothing is stored', async () => {
  const pdf = Buffer.alloc(30_000_000, 0x25).toString('base64');
  const body = JSON.stringify({
    kind: 'user',
    body: 'see attached',
    attachments: [{ type: 'document', data: pdf, mimeType: 'application/pdf' }],
  });
  // The server answers before the upload ends, so the client may see the connection close after the answer.
  const refused = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const request = http.request(
      `${base}/hoard/attached`,
      { method: 'POST', headers: { 'content-type': 'application/json' } },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (data: string) => (text += data));
        response.on('end', () => resolve({ status: response.statusCode!, text }));
        response.on('error', () => resolve({ status: response.statusCode!, text }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
  expect(refused.status, refused.text.slice(0, 2000)).toBe(413);
  expect((JSON.parse(refused.text) as { error: { type: string } }).error.type).toBe('payload_too_large');
  expect((await fetch(`${base}/hoard/attached`)).status).toBe(404);
}, 300_000);
