/**
 * An MCP agent on real workerd (`wrangler dev`), where code generation from strings is forbidden:
 * the server's tool declares an output schema, which the MCP client validates with the cfworker
 * validator (the SDK's default ajv validator would fail here and pass in the test pool).
 */
import { cpSync } from 'node:fs';
import path from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import * as z from 'zod/v4';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startScriptedModelServer, type ScriptedModelServer } from '@flue/runtime/testing';
import { packageRoot } from '../../src/build/package-root.ts';
import { removeDir, tempProject } from '../../src/build/test-project.ts';
import { startMcpTestServer, type TestServer } from '../mcp/mcp-test-server.ts';
import { buildProject, startWranglerDev, type DevServer } from '../support/wrangler-dev.ts';

let model: ScriptedModelServer;
let mcp: TestServer;
let project: string | undefined;
let dev: DevServer | undefined;

beforeAll(async () => {
  model = await startScriptedModelServer();
  mcp = await startMcpTestServer({
    makeServer: () => {
      const server = new McpServer({ name: 'tracker', version: '1.0.0' });
      server.registerTool(
        'create_issue',
        { description: 'Create an issue.', inputSchema: { title: z.string() }, outputSchema: { id: z.string(), title: z.string() } },
        async ({ title }) => ({ content: [{ type: 'text', text: `created ${title}` }], structuredContent: { id: 'ISSUE-1', title } }),
      );
      return server;
    },
  });
  project = tempProject('mcp-e2e');
  cpSync(path.join(packageRoot(), 'test/e2e/fixtures/mcp-app'), project, { recursive: true });
  buildProject(project);
  dev = await startWranglerDev(project, { FLUE_SCRIPTED_MODEL_URL: model.url, MCP_URL: mcp.url });
}, 150_000);

afterAll(async () => {
  await dev?.stop();
  await mcp?.close();
  await model?.close();
  if (project !== undefined) removeDir(project);
}, 30_000);

test('an agent with useMcpConnection lists and calls a server tool with an output schema on wrangler dev', async () => {
  model.script({ toolCalls: [{ name: 'mcp__tracker__create_issue', arguments: { title: 'Crash' } }] }, { text: 'Filed ISSUE-1.' });
  const response = await fetch(`${dev!.base}/ask/t1`, { method: 'POST', body: 'File a crash issue.' });
  expect(response.status).toBe(200);
  expect(((await response.json()) as { reply: string }).reply).toBe('Filed ISSUE-1.');
  expect(model.requests[0]!.tools.map((t) => t.name)).toEqual(['task', 'mcp__tracker__create_issue']);
  expect(model.requests[1]!.messages.filter((m) => m.role === 'tool').at(-1)!.content).toContain('created Crash');
});
