import { describe, expect, it, vi } from 'vitest';
import { PayloadTooLargeError } from '../runtime/common/errors.ts';
import { fromErrorShape, toErrorShape } from './rpc-errors.ts';
import { STREAM_VALUE_BYTES, packValue, unpackValue } from './rpc-values.ts';

describe('values across the RPC boundary', () => {
  it('passes small values through as themselves', async () => {
    const value = { batches: [{ seq: 1, records: [] }], text: 'é'.repeat(1000) };
    expect(packValue(value)).toBe(value);
    expect(packValue(null)).toBeNull();
    expect(await unpackValue(packValue(value))).toBe(value);
  });

  it('decides a small value without writing its JSON, and measures exactly only when the bound cannot tell', () => {
    const stringify = vi.spyOn(JSON, 'stringify');
    try {
      const small = { receipt: { submissionId: 'sub_1' }, reply: { text: 'x'.repeat(10_000) }, n: [1, 2, 3], ok: true, none: null };
      expect(packValue(small)).toBe(small);
      expect(stringify).not.toHaveBeenCalled();
      // ASCII over a sixth of the threshold: the bound cannot tell, the exact size fits.
      const ascii = { text: 'a'.repeat(STREAM_VALUE_BYTES / 4) };
      expect(packValue(ascii)).toBe(ascii);
      expect(stringify).toHaveBeenCalledTimes(1);
    } finally {
      stringify.mockRestore();
    }
  });

  it('streams a value whose JSON is over the threshold and reads it back identically, surrogate pairs included', async () => {
    // Every slice boundary falls inside some pair unless the sender avoids it.
    const text = `a${'😀'.repeat(STREAM_VALUE_BYTES / 4 + 10)}`;
    const value = { rows: [text, 'Zoë "quoted" \\ €'], n: 1 };
    const packed = packValue(value);
    expect(packed).not.toBe(value);
    expect((packed as { flueJsonStream: unknown }).flueJsonStream).toBeInstanceOf(ReadableStream);
    const back = await unpackValue(packed);
    expect(JSON.stringify(back)).toBe(JSON.stringify(value));
  });

  it('rebuilds payload_too_large as the typed class with its status and meta', () => {
    const rebuilt = fromErrorShape(toErrorShape(new PayloadTooLargeError('message', 40 * 1024 * 1024, 32 * 1024 * 1024)));
    expect(rebuilt).toBeInstanceOf(PayloadTooLargeError);
    expect(rebuilt).toMatchObject({
      type: 'payload_too_large',
      status: 413,
      message: 'message is 40 MiB, over the 32 MiB limit.',
      meta: { field: 'message', size: 40 * 1024 * 1024, limit: 32 * 1024 * 1024 },
    });
  });
});
