import { describe, expect, it } from 'vitest';
import { coalescedWake } from './coalesced-wake.ts';

describe('coalescedWake', () => {
  it('schedules one task for a burst of wakes and runs each woken key once, in first-woken order', () => {
    const tasks: (() => void)[] = [];
    const ran: string[] = [];
    const wake = coalescedWake<string>(
      (key) => ran.push(key),
      (task) => tasks.push(task),
    );
    for (const key of ['a', 'b', 'a', 'a', 'c', 'b']) wake(key);
    expect(tasks).toHaveLength(1);
    expect(ran).toEqual([]);
    tasks[0]!();
    expect(ran).toEqual(['a', 'b', 'c']);
  });

  it('schedules again for a wake after the task ran, also one made while it runs', () => {
    const tasks: (() => void)[] = [];
    const ran: string[] = [];
    const wake = coalescedWake<string>(
      (key) => {
        ran.push(key);
        if (key === 'a') wake('again');
      },
      (task) => tasks.push(task),
    );
    wake('a');
    tasks.shift()!();
    expect(tasks).toHaveLength(1);
    tasks.shift()!();
    expect(ran).toEqual(['a', 'again']);
  });
});
