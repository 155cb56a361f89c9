import { describe, expect, it } from 'vitest';
import { jsonSize, steppedUtf8Size, utf8Size } from './limits.ts';

const encoded = (text: string) => new TextEncoder().encode(text).byteLength;

// Node answers large strings natively; the stepped measure is what a host without one runs.
describe.each([
  ['utf8Size', utf8Size],
  ['steppedUtf8Size', steppedUtf8Size],
])('%s', (_name, utf8Size) => {
  it('agrees with TextEncoder on short, long, multi-byte and emoji text', () => {
    const short = ['😀', 'a\ud800', '中'.repeat(16 * 1024), `${'a'.repeat(16 * 1024 - 1)}😀`];
    for (const text of ['', 'abc', 'é'.repeat(300), 'Grüße 😀 '.repeat(10_000), '中'.repeat(40_000), ...short]) {
      expect(utf8Size(text)).toBe(encoded(text));
    }
  });

  it('counts a surrogate pair that straddles a measuring step as 4 bytes, wherever it falls', () => {
    for (const offset of [16 * 1024 - 2, 16 * 1024 - 1, 16 * 1024, 32 * 1024 - 1]) {
      const text = `${'a'.repeat(offset)}😀${'b'.repeat(1000)}`;
      expect(utf8Size(text)).toBe(offset + 4 + 1000);
    }
  });

  it('counts lone surrogates as the 3-byte replacement character, also at a step boundary', () => {
    for (const lone of ['\ud800', '\udc00']) {
      const text = `${'a'.repeat(16 * 1024 - 1)}${lone}x${'b'.repeat(500)}`;
      expect(utf8Size(text)).toBe(encoded(text));
      expect(utf8Size(text)).toBe(16 * 1024 - 1 + 3 + 1 + 500);
    }
    expect(utf8Size(`${'a'.repeat(300)}\ud800`)).toBe(303);
  });
});

describe('jsonSize', () => {
  it('sizes a value by its JSON', () => {
    expect(jsonSize(undefined)).toBe(0);
    expect(jsonSize({ a: 'é' })).toBe(encoded('{"a":"é"}'));
  });
});
