import { describe, expect, it } from 'vitest';
import { promised } from './promised.ts';

describe('promised', () => {
  it("answers work's own promise", async () => {
    const answer = Promise.resolve(7);
    expect(promised(() => answer)).toBe(answer);
    await expect(promised(() => Promise.reject(new Error('late')))).rejects.toThrow('late');
  });

  it('turns a synchronous throw into a rejection', async () => {
    const failed = promised(() => {
      throw new Error('early');
    });
    await expect(failed).rejects.toThrow('early');
  });
});
