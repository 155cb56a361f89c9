import { describe, expect, it } from 'vitest';
import { FlueError } from './errors.ts';
import { lazyPart } from './lazy-part.ts';

describe('lazyPart', () => {
  it('loads once for concurrent and later uses', async () => {
    let loads = 0;
    const part = lazyPart('probe', async () => ({ n: ++loads }));
    const [a, b] = await Promise.all([part(), part()]);
    expect(a).toBe(b);
    expect(await part()).toBe(a);
    expect(loads).toBe(1);
  });

  it('a failed load rejects with an error naming the part; the next use loads again', async () => {
    let loads = 0;
    const part = lazyPart('probe', async () => {
      loads++;
      if (loads === 1) throw new TypeError('Failed to fetch dynamically imported module');
      return { ok: true };
    });
    const failure = await part().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(FlueError);
    expect(failure).toMatchObject({
      type: 'internal_error',
      message: 'The runtime could not load its probe code.',
      dev: 'TypeError: Failed to fetch dynamically imported module',
    });
    expect((failure as FlueError).cause).toBeInstanceOf(TypeError);
    expect(await part()).toEqual({ ok: true });
    expect(loads).toBe(2);
  });
});
