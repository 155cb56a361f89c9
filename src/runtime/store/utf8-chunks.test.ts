import { describe, expect, it } from 'vitest';
import { encodeInChunks } from './utf8-chunks.ts';

/** The chunks `encodeInChunks` emits, copied (it reuses its buffer). */
function chunksOf(text: string, chunkBytes: number): { chunks: Uint8Array[]; total: number } {
  const chunks: Uint8Array[] = [];
  const total = encodeInChunks(text, chunkBytes, (chunk, index) => {
    expect(index).toBe(chunks.length);
    chunks.push(chunk.slice());
  });
  return { chunks, total };
}

function joined(chunks: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

describe('encodeInChunks', () => {
  const texts = {
    ascii: 'abcdefghij'.repeat(50),
    'two-byte': 'é'.repeat(333),
    'three-byte': `a${'中'.repeat(301)}`,
    // Pairs at every offset: some slice and chunk ends fall between their halves.
    emoji: `x${'😀y'.repeat(200)}`,
    mixed: 'Grüße 😀 中文 \n"\\'.repeat(40),
    'lone surrogates': `a\ud800b\udc00c${'d'.repeat(40)}\ud83d`,
  };

  for (const [name, text] of Object.entries(texts)) {
    it(`cuts ${name} text into the bytes TextEncoder makes, every chunk full but the last`, () => {
      const whole = new TextEncoder().encode(text);
      for (const chunkBytes of [4, 5, 7, 64, 1000, whole.byteLength, whole.byteLength + 1]) {
        const { chunks, total } = chunksOf(text, chunkBytes);
        expect(total).toBe(whole.byteLength);
        expect(joined(chunks)).toEqual(whole);
        expect(chunks.length).toBe(Math.ceil(whole.byteLength / chunkBytes));
        for (const chunk of chunks.slice(0, -1)) expect(chunk.byteLength).toBe(chunkBytes);
      }
    });
  }

  it('emits nothing for the empty string', () => {
    expect(chunksOf('', 16)).toEqual({ chunks: [], total: 0 });
  });

  it('refuses a chunk size a character cannot fit in', () => {
    expect(() => encodeInChunks('abc', 3, () => {})).toThrow(/chunkBytes must be an integer of at least 4, got 3/);
    expect(() => encodeInChunks('abc', 4.5, () => {})).toThrow(RangeError);
  });
});
