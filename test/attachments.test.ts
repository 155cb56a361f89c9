import { expect, test } from 'vitest';
import { init, useDelivery, useModel, useTool } from '@flue/runtime';
import { configuredRuntime } from '../src/runtime/host/runtime.ts';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

const ctx = useScriptedRuntime();

let seenByRender: unknown;
function Viewer() {
  useModel('anthropic/claude-haiku-4-5');
  const delivery = useDelivery();
  seenByRender = delivery.kind === 'user' ? delivery.attachments : undefined;
  useTool({ name: 'noop', description: 'Nothing.', run: () => 'ok' });
  return 'Describe images.';
}

const pixel = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex');

test('image and document attachments are stored once, shown to the model, projected as file parts and downloadable', async () => {
  await ctx.start([Viewer]);
  ctx.server.script({ text: 'A tiny image.' });
  const big = Buffer.alloc(2_500_000, 7); // spans three storage chunks
  const handle = init(Viewer, { id: 'att-1' });
  const receipt = await handle.dispatch({
    message: {
      kind: 'user',
      body: 'What is this?',
      attachments: [
        { type: 'image', data: pixel.toString('base64'), mimeType: 'image/png', filename: 'pixel.png' },
        { type: 'document', data: big.toString('base64'), mimeType: 'application/pdf' },
      ],
    },
  });
  const reply = await handle.read(receipt);
  expect(reply.text).toBe('A tiny image.');

  const request = ctx.server.requests[0]!.body;
  const blocks = request.messages.at(-1).content as { type: string; source?: { data: string } }[];
  expect(blocks.find((b) => b.type === 'image')!.source!.data).toBe(pixel.toString('base64'));
  expect(blocks.find((b) => b.type === 'document')!.source!.data).toBe(big.toString('base64'));
  expect((seenByRender as { data: string }[])[0]!.data).toBe(pixel.toString('base64'));

  const runtime = configuredRuntime()!;
  const history = (await runtime.history('Viewer', 'att-1'))!;
  const files = history.messages[0]!.parts.filter((p) => p.type === 'file');
  expect(files).toEqual([
    { type: 'file', mediaType: 'image/png', id: `att_dispatch_${receipt.submissionId}_0`, size: pixel.length, filename: 'pixel.png' },
    { type: 'file', mediaType: 'application/pdf', id: `att_dispatch_${receipt.submissionId}_1`, size: big.length },
  ]);
  const stored = (await runtime.attachment('Viewer', 'att-1', `att_dispatch_${receipt.submissionId}_1`))!;
  expect(stored.mimeType).toBe('application/pdf');
  expect(Buffer.from(stored.bytes).equals(big)).toBe(true);
  expect(await runtime.attachment('Viewer', 'att-1', 'att_nope')).toBeNull();
  expect(await runtime.attachment('Viewer', 'never', 'att_nope')).toBeUndefined();
});

test('a keyed replay with different attachment bytes is a conflict', async () => {
  await ctx.start([Viewer]);
  ctx.server.script({ text: 'ok' });
  const handle = init(Viewer, { id: 'att-2' });
  const send = (bytes: Buffer) =>
    handle.dispatch({
      message: { kind: 'user', body: 'look', attachments: [{ type: 'image', data: bytes.toString('base64'), mimeType: 'image/png' }] },
      idempotencyKey: 'same',
    });
  const first = await send(pixel);
  expect((await send(pixel)).deduplicated).toBe(true);
  await expect(send(Buffer.concat([pixel, Buffer.from([1])]))).rejects.toMatchObject({ type: 'submission_conflict' });
  await handle.read(first);
});
