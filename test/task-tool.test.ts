/**
 * The `task` tool's optional parameters and events (skills-subagents-mcp.md §2.4, events.md §5):
 * `cwd` re-points the child at a directory of the parent's sandbox, `attachments` hands it images
 * of the delegating conversation, and every child run publishes `task_start` and `task`.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import {
  AttachmentNotAvailableError,
  defineSubagent,
  init,
  observe,
  useDelivery,
  useModel,
  useSandbox,
  useSubagent,
  useTool,
  virtualSandbox,
  type FlueEvent,
} from '@flue/runtime';
import { local } from '@flue/runtime/node';
import { childConversations } from '@flue/runtime/testing';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

const ctx = useScriptedRuntime();

let delegateSaw: unknown;
const helper = defineSubagent({
  name: 'helper',
  description: 'Helps with one focused thing.',
  agent() {
    delegateSaw = useDelivery();
    return 'You help.';
  },
});

const files = virtualSandbox({
  files: { '/workspace/top.txt': 'top level', '/workspace/pkg/notes.txt': 'package notes' },
});

function Lead() {
  useModel('anthropic/claude-haiku-4-5');
  useSandbox(files);
  useSubagent(helper);
  return 'Lead the work.';
}

function Bare() {
  useModel('anthropic/claude-haiku-4-5');
  useSubagent(helper);
  return 'No sandbox here.';
}

let events: FlueEvent[] = [];
let stopObserving: (() => void) | undefined;
function watchEvents(): void {
  events = [];
  stopObserving = observe((event) => {
    events.push(event);
  });
}
afterEach(() => {
  stopObserving?.();
  stopObserving = undefined;
  delegateSaw = undefined;
});
const taskEvents = () => events.filter((e) => e.type === 'task_start' || e.type === 'task');
const toolResults = (index: number) => ctx.server.requests[index]!.messages.filter((m) => m.role === 'tool');

test('cwd re-points the child at a directory of the parent sandbox; the parent stays where it was', async () => {
  await ctx.start([Lead]);
  watchEvents();
  ctx.server.script(
    { toolCalls: [{ id: 'call_cwd', name: 'task', arguments: { agent: 'helper', prompt: 'Read the notes.', cwd: 'pkg' } }] },
    {
      toolCalls: [
        { name: 'read', arguments: { path: 'notes.txt' } },
        { name: 'bash', arguments: { command: 'pwd' } },
      ],
    }, // child
    { text: 'The notes say: package notes.' }, // child
    { toolCalls: [{ name: 'read', arguments: { path: 'top.txt' } }] }, // parent, relative to its own cwd
    { text: 'Done.' },
  );
  const handle = init(Lead, { id: 'cwd-1' });
  const receipt = await handle.dispatch('Go.');
  expect((await handle.read(receipt)).text).toBe('Done.');

  const [notes, pwd] = toolResults(2).map((m) => m.content);
  expect(notes).toContain('package notes');
  expect(pwd!.trim()).toBe('/workspace/pkg');
  expect(toolResults(3).map((m) => m.content)).toEqual(['The notes say: package notes.']);
  expect(toolResults(4).at(-1)!.content).toContain('top level');

  const [child] = await childConversations(Lead, 'cwd-1');
  expect(child).toMatchObject({ agent: 'helper', toolCallId: 'call_cwd', session: expect.stringMatching(/^task:msg_\w+\/call_cwd$/) });
  const [start, end] = taskEvents();
  expect(start).toMatchObject({
    type: 'task_start',
    taskId: 'call_cwd',
    prompt: 'Read the notes.',
    agent: 'helper',
    cwd: '/workspace/pkg',
    parentSession: 'default',
    session: child!.session,
    conversationId: child!.conversationId,
    toolCallId: 'call_cwd',
    agentInput: { text: 'Read the notes.' },
    submissionId: receipt.submissionId,
    instanceId: 'cwd-1',
  });
  expect(end).toMatchObject({
    type: 'task',
    taskId: 'call_cwd',
    agent: 'helper',
    isError: false,
    result: 'The notes say: package notes.',
    parentSession: 'default',
    session: child!.session,
    conversationId: child!.conversationId,
  });
  expect(end!.durationMs).toEqual(expect.any(Number));
  expect(taskEvents()).toHaveLength(2);
});

test('a cwd that is missing, not a directory, or given without a sandbox is an error result and no child', async () => {
  await ctx.start([Lead, Bare]);
  watchEvents();
  ctx.server.script(
    {
      toolCalls: [
        { id: 'call_missing', name: 'task', arguments: { agent: 'helper', prompt: 'x', cwd: 'nowhere' } },
        { id: 'call_file', name: 'task', arguments: { agent: 'helper', prompt: 'x', cwd: 'top.txt' } },
      ],
    },
    { text: 'ok' },
    { toolCalls: [{ id: 'call_bare', name: 'task', arguments: { agent: 'helper', prompt: 'x', cwd: 'src' } }] },
    { text: 'ok' },
  );
  const lead = init(Lead, { id: 'cwd-2' });
  await lead.read(await lead.dispatch('Go.'));
  const [missing, file] = toolResults(1);
  expect(missing).toMatchObject({ toolCallId: 'call_missing', isError: true });
  expect(missing!.content).toMatch(/^The task cwd "nowhere" cannot be used: /);
  expect(file).toMatchObject({
    toolCallId: 'call_file',
    isError: true,
    content: 'The task cwd "top.txt" cannot be used: /workspace/top.txt is not a directory.',
  });
  expect(await childConversations(Lead, 'cwd-2')).toEqual([]);

  const bare = init(Bare, { id: 'cwd-3' });
  await bare.read(await bare.dispatch('Go.'));
  expect(toolResults(3).at(-1)).toMatchObject({
    toolCallId: 'call_bare',
    isError: true,
    content: 'The task cwd "src" cannot be used: this agent has no sandbox.',
  });
  expect(await childConversations(Bare, 'cwd-3')).toEqual([]);
  expect(taskEvents()).toEqual([]);
});

test('under local() a task cwd must stay inside the sandbox root', async () => {
  const base = await mkdtemp(join(tmpdir(), 'flue-task-cwd-'));
  const root = join(base, 'root');
  await mkdir(join(root, 'sub'), { recursive: true });
  await writeFile(join(root, 'sub', 'f.txt'), 'inside sub');
  const host = local({ cwd: root });
  function Local() {
    useModel('anthropic/claude-haiku-4-5');
    useSandbox(host);
    useSubagent(helper);
    return 'Work locally.';
  }
  try {
    await ctx.start([Local]);
    ctx.server.script(
      { toolCalls: [{ id: 'call_out', name: 'task', arguments: { agent: 'helper', prompt: 'Escape.', cwd: '..' } }] },
      { toolCalls: [{ id: 'call_in', name: 'task', arguments: { agent: 'helper', prompt: 'Read f.txt.', cwd: 'sub' } }] },
      { toolCalls: [{ name: 'read', arguments: { path: 'f.txt' } }] }, // child, in root/sub
      { text: 'It says inside sub.' }, // child
      { text: 'Done.' },
    );
    const handle = init(Local, { id: 'cwd-local' });
    expect((await handle.read(await handle.dispatch('Go.'))).text).toBe('Done.');
    const refused = toolResults(1).at(-1)!;
    expect(refused).toMatchObject({ toolCallId: 'call_out', isError: true });
    expect(refused.content).toContain('outside the sandbox root');
    expect(toolResults(3).at(-1)!.content).toContain('inside sub');
    expect(toolResults(4).at(-1)).toMatchObject({ toolCallId: 'call_in', isError: false, content: 'It says inside sub.' });
    expect((await childConversations(Local, 'cwd-local')).map((c) => c.toolCallId)).toEqual(['call_in']);
  } finally {
    await rm(base, { recursive: true, force: true });
  }
});

const pixel = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex');

test('attachments hand images of the conversation to the child; an unknown id is an error result and no child', async () => {
  await ctx.start([Lead]);
  watchEvents();
  let imageId = '';
  let documentId = '';
  ctx.server.script(
    (request) => {
      // The model learns the ids from the manifest after the user's text.
      const text = JSON.stringify(request.body.messages.at(-1));
      imageId = /<image id=\\"([^"\\]+)\\" mimeType=\\"image\/png\\" \/>/.exec(text)![1]!;
      documentId = imageId.replace(/_0$/, '_1');
      return {
        toolCalls: [
          {
            id: 'call_img',
            name: 'task',
            arguments: { agent: 'helper', prompt: 'Describe the image.', attachments: [{ id: imageId }, { id: imageId }] },
          },
          {
            id: 'call_unknown',
            name: 'task',
            arguments: { agent: 'helper', prompt: 'x', attachments: [{ id: imageId }, { id: 'att_nope' }] },
          },
          { id: 'call_doc', name: 'task', arguments: { agent: 'helper', prompt: 'x', attachments: [{ id: documentId }] } },
        ],
      };
    },
    { text: 'A single pixel.' }, // the one child
    { text: 'Described.' },
  );
  const handle = init(Lead, { id: 'att-task-1' });
  const receipt = await handle.dispatch({
    message: {
      kind: 'user',
      body: 'Look at this.',
      attachments: [
        { type: 'image', data: pixel.toString('base64'), mimeType: 'image/png', filename: 'pixel.png' },
        { type: 'document', data: Buffer.from('%PDF-1.4').toString('base64'), mimeType: 'application/pdf' },
      ],
    },
  });
  expect((await handle.read(receipt)).text).toBe('Described.');
  expect(imageId).toBe(`att_dispatch_${receipt.submissionId}_0`);

  // The child's first user message carries the image (once) to the model, after its manifest.
  const childFirst = ctx.server.requests[1]!.body.messages[0] as {
    content: { type: string; text?: string; source?: { data: string; media_type: string } }[];
  };
  expect(childFirst.content.filter((b) => b.type === 'image').map((b) => b.source)).toEqual([
    { type: 'base64', media_type: 'image/png', data: pixel.toString('base64') },
  ]);
  expect(childFirst.content[0]!.text).toBe(
    `Describe the image.\n\n<attachments>\n<image id="${imageId}" mimeType="image/png" />\n</attachments>`,
  );
  expect(delegateSaw).toEqual({
    kind: 'user',
    body: 'Describe the image.',
    attachments: [{ type: 'image', data: pixel.toString('base64'), mimeType: 'image/png', filename: 'pixel.png' }],
  });

  const results = toolResults(2);
  expect(results.find((m) => m.toolCallId === 'call_img')).toMatchObject({ isError: false, content: 'A single pixel.' });
  const unknown = new AttachmentNotAvailableError('att_nope');
  expect(unknown).toMatchObject({ type: 'attachment_not_available', meta: { attachmentId: 'att_nope' } });
  expect(results.find((m) => m.toolCallId === 'call_unknown')).toMatchObject({ isError: true, content: unknown.message });
  // Documents are not forwardable: only images are.
  expect(results.find((m) => m.toolCallId === 'call_doc')).toMatchObject({
    isError: true,
    content: new AttachmentNotAvailableError(documentId).message,
  });

  const children = await childConversations(Lead, 'att-task-1');
  expect(children.map((c) => c.toolCallId)).toEqual(['call_img']);
  expect(children[0]!.snapshot.messages[0]!.parts).toEqual([
    { type: 'text', text: 'Describe the image.', state: 'done' },
    { type: 'file', mediaType: 'image/png', id: imageId, size: pixel.length, filename: 'pixel.png' },
  ]);
  const starts = events.filter((e) => e.type === 'task_start');
  expect(starts).toHaveLength(1);
  expect(starts[0]).toMatchObject({ taskId: 'call_img', agentInput: { text: 'Describe the image.', images: [{ mimeType: 'image/png' }] } });
  expect(JSON.stringify(events)).not.toContain(pixel.toString('base64'));
});

test('a failing child publishes a task event with isError and the error message; its log lines name the task', async () => {
  const noisy = defineSubagent({
    name: 'noisy',
    description: 'Logs, then its model fails.',
    agent() {
      useTool({
        name: 'shout',
        description: 'Log a line.',
        run({ log }) {
          log.info('shouting');
          return 'shouted';
        },
      });
      return 'You fail.';
    },
  });
  function Parent() {
    useModel('anthropic/claude-haiku-4-5');
    useSubagent(noisy);
    return 'Delegate.';
  }
  await ctx.start([Parent]);
  watchEvents();
  ctx.server.script(
    { toolCalls: [{ id: 'call_fail', name: 'task', arguments: { agent: 'noisy', prompt: 'Try.' } }] },
    { toolCalls: [{ name: 'shout', arguments: {} }] }, // the child
    { status: 400, errorBody: 'the request is malformed' }, // the child's next model call
    { text: 'It failed.' },
  );
  const handle = init(Parent, { id: 'task-fail' });
  expect((await handle.read(await handle.dispatch('Go.'))).text).toBe('It failed.');
  const result = toolResults(3).at(-1)!;
  expect(result).toMatchObject({ toolCallId: 'call_fail', isError: true });
  const end = events.find((e) => e.type === 'task')!;
  expect(end).toMatchObject({
    taskId: 'call_fail',
    agent: 'noisy',
    isError: true,
    result: result.content,
    errorInfo: { type: 'operation_failed' },
  });
  expect(events.map((e) => e.type).filter((t) => t.startsWith('task'))).toEqual(['task_start', 'task']);
  const start = events.find((e) => e.type === 'task_start')!;
  const line = events.find((e) => e.type === 'log' && e.message === 'shouting')!;
  expect(line).toMatchObject({
    taskId: 'call_fail',
    parentSession: 'default',
    session: start.session,
    conversationId: start.conversationId,
    attributes: { tool: 'shout' },
  });
});
