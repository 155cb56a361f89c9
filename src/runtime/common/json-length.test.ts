import { describe, expect, it } from 'vitest';
import { jsonBytesAtMost, jsonLongerThan } from './json-length.ts';

describe('jsonLongerThan', () => {
  const values: unknown[] = [
    null,
    'short',
    12345,
    true,
    [1, 'two', { three: 3 }],
    { type: 'user_message', body: 'hello', nested: { list: [1, 2, 3], flag: false } },
    { text: 'x'.repeat(900), more: ['y'.repeat(50), 'z'] },
  ];

  it.each(values.map((value) => [JSON.stringify(value).length, value]))(
    'agrees with the JSON text (%i characters) at every limit',
    (length, value) => {
      for (let limit = 0; limit <= (length as number) + 2; limit++) {
        expect(jsonLongerThan(value, limit), `limit ${limit}`).toBe((length as number) > limit);
      }
    },
  );

  it('stops at the limit: a 20 MB string is not walked past it', () => {
    expect(jsonLongerThan({ records: ['a'.repeat(20_000_000)] }, 1000)).toBe(true);
    expect(jsonLongerThan({ records: [] }, 1000)).toBe(false);
  });
});

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
  });
});
