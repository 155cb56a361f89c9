import { describe, expect, it } from 'vitest';
import { toJsonSnapshot } from './values.ts';

describe('toJsonSnapshot', () => {
  it('copies shared (non-cyclic) references', () => {
    const shared = { a: 1 };
    const copy = toJsonSnapshot({ x: shared, y: shared }) as { x: object; y: object };
    expect(copy).toEqual({ x: { a: 1 }, y: { a: 1 } });
    expect(copy.x).not.toBe(shared);
  });

  it('keeps a top-level undefined and names the root in errors', () => {
    expect(toJsonSnapshot(undefined)).toBeUndefined();
    expect(() => toJsonSnapshot(1n, 'step "x"')).toThrow('a BigInt at step "x"');
  });
});
