import { describe, expect, it } from 'vitest';
import { jsonBytesAtMost } from './json-length.ts';

describe('jsonBytesAtMost', () => {
  it('bounds JSON sizes from above, and answers "not known" for what is not plain data', () => {
    const samples: unknown[] = [
      { a: '\u0000\n"', b: [1.5e300, -0, true, null, undefined, 'é😀'], c: { d: {} } },
      ['\u0001'.repeat(100)],
      { [`k${'\u0002'.repeat(10)}`]: 'v' },
    ];
    for (const sample of samples) {
      const bytes = new TextEncoder().encode(JSON.stringify(sample)).byteLength;
      expect(jsonBytesAtMost(sample, bytes - 1) && bytes > 0).toBe(false);
      expect(jsonBytesAtMost(sample, bytes * 12)).toBe(true);
    }
    expect(jsonBytesAtMost({ at: new Date(0) }, 1_000_000)).toBe(false);
    expect(jsonBytesAtMost({ bytes: new Uint8Array(4) }, 1_000_000)).toBe(false);
    // A plain object's own toJSON decides its JSON (114 bytes here, where its keys bound 95).
    const withToJson = { message: { toJSON: () => 'x'.repeat(100) } };
    expect(JSON.stringify(withToJson).length).toBe(114);
    expect(jsonBytesAtMost(withToJson, 100)).toBe(false);
  });
});
