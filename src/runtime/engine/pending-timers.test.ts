import { describe, expect, it } from 'vitest';
import { AgentDefinitionError } from '../common/errors.ts';
import { conversationKey } from '../store/conversation-key.ts';
import type { TimerRow } from '../store/sql-store.ts';
import { MAX_TIMER_BODY_BYTES, PendingTimers, scheduledTimer, timerFromOptions } from './pending-timers.ts';

const key = conversationKey('Agent', 'a1');
const now = Date.parse('2026-03-01T12:00:00.000Z');

function refusal(fn: () => unknown): AgentDefinitionError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(AgentDefinitionError);
    return error as AgentDefinitionError;
  }
  throw new Error('expected a refusal');
}

describe('timerFromOptions', () => {
  it('resolves inMs and every form of at to an absolute due time, with a fresh id per schedule', () => {
    const inMs = timerFromOptions(key, 'nudge', { inMs: 1500, body: 'hi' }, now);
    expect(inMs).toMatchObject({ conversation: key, name: 'nudge', dueAt: now + 1500, body: 'hi' });
    expect(inMs.id).toMatch(/^tmr_/);
    expect(timerFromOptions(key, 'nudge', { inMs: 1500 }, now).id).not.toBe(inMs.id);
    const at = '2026-03-02T00:00:00.000Z';
    for (const form of [at, Date.parse(at), new Date(at)]) {
      expect(timerFromOptions(key, 'day', { at: form }, now).dueAt).toBe(Date.parse(at));
    }
    expect(scheduledTimer(timerFromOptions(key, 'day', { at }, now))).toMatchObject({ name: 'day', dueAt: at, body: '' });
  });

  it('refuses bad options with a typed error naming the field', () => {
    expect(refusal(() => timerFromOptions(key, '', { inMs: 1 }, now)).message).toMatch(/name must be a non-empty string/);
    expect(refusal(() => timerFromOptions(key, 'a\nb', { inMs: 1 }, now)).message).toMatch(/control characters/);
    expect(refusal(() => timerFromOptions(key, 'flue:mine', { inMs: 1 }, now)).message).toMatch(/reserved for the framework/);
    expect(refusal(() => timerFromOptions(key, 'x', {}, now)).message).toMatch(/exactly one of `at`/);
    expect(refusal(() => timerFromOptions(key, 'x', { at: now, inMs: 5 }, now)).message).toMatch(/exactly one of `at`/);
    expect(refusal(() => timerFromOptions(key, 'x', { inMs: -1 }, now)).message).toMatch(/inMs must be a finite number/);
    expect(refusal(() => timerFromOptions(key, 'x', { at: 'next tuesday' }, now)).message).toMatch(/at must be a valid Date/);
    expect(refusal(() => timerFromOptions(key, 'x', { inMs: 1, body: 7 as never }, now)).message).toMatch(/body must be a string/);
    expect(() => timerFromOptions(key, 'x', { inMs: 1, body: 'x'.repeat(MAX_TIMER_BODY_BYTES + 1) }, now)).toThrow(
      expect.objectContaining({ type: 'payload_too_large', meta: expect.objectContaining({ field: 'useTimer().schedule("x") body' }) }),
    );
    expect(refusal(() => timerFromOptions(key, 'x', { inMs: 1, every: 5 } as never, now)).message).toMatch(/unknown option "every"/);
    expect(refusal(() => timerFromOptions(key, 'x', { inMs: Number.NaN }, now)).rule).toBe('hook_usage');
  });

  it('lets the framework use its reserved prefix', () => {
    expect(timerFromOptions(key, 'flue:approval:call_1', { inMs: 10 }, now, true).name).toBe('flue:approval:call_1');
  });
});

describe('PendingTimers', () => {
  const row = (name: string, dueAt: number): TimerRow => ({ conversation: key, name, id: `tmr_${name}_${dueAt}`, dueAt, body: '' });

  it('overlays schedules and cancellations on the committed timers, earliest first, until taken', () => {
    const committed = [row('b', 20), row('c', 30)];
    const pending = new PendingTimers(() => committed);
    expect(pending.isEmpty).toBe(true);
    pending.schedule(row('a', 10));
    pending.schedule(row('c', 5)); // a reschedule replaces the committed one
    expect(pending.cancel('b')).toBe(true);
    expect(pending.cancel('missing')).toBe(false);
    expect(pending.read().map((t) => [t.name, t.dueAt])).toEqual([
      ['c', 5],
      ['a', 10],
    ]);
    const taken = pending.take();
    expect(taken.map(([name, timer]) => [name, timer?.dueAt ?? null])).toEqual([
      ['a', 10],
      ['c', 5],
      ['b', null],
      ['missing', null],
    ]);
    expect(pending.isEmpty).toBe(true);
  });
});
