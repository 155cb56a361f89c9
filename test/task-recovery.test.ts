/**
 * A `task` child with `cwd` and `attachments` resumed by a new engine (durability.md §6.2): the
 * resumed child runs in the same directory and still sees the forwarded image, whose bytes stay
 * in the root conversation's attachment store.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { defineSubagent, useAgentStart, useModel, useSandbox, useSubagent, virtualSandbox } from '@flue/runtime';
import { sqlite } from '@flue/runtime/node';
import { scriptedProvider, startScriptedModelServer, type ScriptedModelServer } from '@flue/runtime/testing';
import { registerProviders } from '../src/runtime/model/providers.ts';
import { SqlStore } from '../src/runtime/store/sql-store.ts';
import { deltaCommitted, engineOn, until } from './support/engine.ts';
import { parseDeliveredMessage } from '../src/runtime/engine/delivered-message.ts';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer();
  registerProviders([scriptedProvider({ baseUrl: server.url, id: 'anthropic', models: ['claude-haiku-4-5'], api: 'anthropic-messages' })]);
});
afterAll(async () => server.close());

const viewer = defineSubagent({ name: 'viewer', description: 'Looks at images.', agent: () => 'You look at images.' });
const files = virtualSandbox({ files: { '/workspace/pkg/README.md': '# pkg' } });

function Curator() {
  useModel('anthropic/claude-haiku-4-5');
  useSandbox(files);
  useSubagent(viewer);
  // A committed start seam: recovery does not re-run it, so the environment is set up elsewhere.
  useAgentStart(() => {});
  return 'Curate.';
}

const pixel = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex');

test('a resumed task child keeps its cwd and its forwarded image', async () => {
  const adapter = sqlite();
  await adapter.migrate();
  const driver = await adapter.connect();
  const store = new SqlStore(driver);
  const first = await engineOn(store, [Curator]);
  let imageId = '';
  server.script(
    (request) => {
      imageId = /<image id=\\"([^"\\]+)\\"/.exec(JSON.stringify(request.body.messages.at(-1)))![1]!;
      return {
        toolCalls: [
          { id: 'call_view', name: 'task', arguments: { agent: 'viewer', prompt: 'Look.', cwd: 'pkg', attachments: [{ id: imageId }] } },
        ],
      };
    },
    { text: ['It is ', 'a tiny'], hangAfterChunks: 4 }, // the child stalls mid-stream
  );
  const message = parseDeliveredMessage({
    kind: 'user',
    body: 'Catalogue this.',
    attachments: [{ type: 'image', data: pixel.toString('base64'), mimeType: 'image/png' }],
  });
  const { receipt } = await first.admit('Curator', { id: 'c1', message }, 'dispatch');
  // A reader follows the conversation (the stop ends its read): the child's stream keeps its
  // schedule, so the trailing flush commits the child's partial.
  first.read('Curator', 'c1', receipt.submissionId, { onEvent: () => {} }).catch(() => {});
  await server.waitForRequests(2);
  await until(() => deltaCommitted(driver));
  await first.stop(100);

  server.script(
    { toolCalls: [{ name: 'bash', arguments: { command: 'pwd && cat README.md' } }] }, // the resumed child
    { text: 'A tiny image, catalogued in /workspace/pkg.' },
    { text: 'Catalogued.' },
  );
  const second = await engineOn(store, [Curator]);
  for (const stream of second.view.keysWithOpenWork()) void second.runQueue(stream);
  const reply = await second.read('Curator', 'c1', receipt.submissionId);
  expect(reply.text).toBe('Catalogued.');
  expect(server.requests).toHaveLength(5);

  const resumed = server.requests[2]!;
  expect(resumed.system).toContain('You look at images.');
  const firstUser = resumed.body.messages[0] as { content: { type: string; source?: { data: string } }[] };
  expect(firstUser.content.find((b) => b.type === 'image')!.source!.data).toBe(pixel.toString('base64'));
  expect(resumed.messages.some((m) => m.role === 'assistant' && m.content.startsWith('It is '))).toBe(true);
  const shell = server.requests[3]!.messages.filter((m) => m.role === 'tool').at(-1)!;
  expect(shell.content).toContain('/workspace/pkg');
  expect(shell.content).toContain('# pkg');
  const parent = server.requests[4]!.messages.find((m) => m.role === 'tool' && m.toolCallId === 'call_view');
  expect(parent).toMatchObject({ isError: false, content: 'A tiny image, catalogued in /workspace/pkg.' });
  await second.stop();
  await adapter.close();
});
