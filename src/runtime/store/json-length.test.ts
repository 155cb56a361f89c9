import { describe, expect, it } from 'vitest';
import { jsonLongerThan } from './json-length.ts';

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
