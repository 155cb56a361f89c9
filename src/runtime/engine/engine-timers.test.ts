/**
 * The engine's side of durable timers: a due timer becomes one queued `timer` delivery of its
 * conversation, in the transaction that removes it, and a timer delivered once is never delivered
 * again, even when its row is found a second time.
 */
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { sqlite } from '../../node/sqlite.ts';
import { useModel } from '../index.ts';
import { parseDeliveredMessage } from './delivered-message.ts';
import { ConversationEngine, timerSubmissionId } from './engine.ts';
import { ConversationWriter } from './conversation-writer.ts';
import type { ConversationRecord } from '../store/records.ts';
import { AgentRegistry } from '../authoring/identity.ts';
import { SqlStore, type TimerRow } from '../store/sql-store.ts';
import { conversationKey } from '../store/conversation-key.ts';
import { InvalidRequestError } from '../common/errors.ts';

function Sleeper() {
  useModel('engine-unit/model');
  return 'Wake up when told.';
}

let store: SqlStore;
let engine: ConversationEngine;
let wakes: string[];
let armed: (number | undefined)[];
const key = conversationKey('Sleeper', 's1');

beforeEach(async () => {
  const adapter = sqlite();
  await adapter.migrate();
  store = new SqlStore(await adapter.connect());
  const registry = new AgentRegistry();
  registry.register(Sleeper);
  wakes = [];
  armed = [];
  engine = new ConversationEngine({
    store,
    registry,
    env: {},
    wake: (stream) => wakes.push(stream),
    timersChanged: (next) => armed.push(next),
  });
  // The conversation exists: a timer is only ever scheduled by one of its responses.
  await engine.admit('Sleeper', { id: 's1', message: parseDeliveredMessage('hello') }, 'dispatch');
  wakes.length = 0;
});

const timer = (name: string, dueAt: number, id = `tmr_${name}`): TimerRow => ({ conversation: key, name, id, dueAt, body: `wake ${name}` });

describe('fireDueTimers', () => {
  it('delivers each due timer once, as a queued timer signal from the agent, and leaves later ones', () => {
    store.putTimer(timer('soon', 1_000));
    store.putTimer(timer('later', 5_000));
    expect(engine.view.nextTimerDue()).toBe(1_000);

    expect(engine.fireDueTimers(2_000)).toBe(1);
    const row = engine.view.submission(timerSubmissionId('tmr_soon'))!;
    expect(row).toMatchObject({ status: 'queued', kind: 'dispatch', conversation: key });
    expect(row.payload).toEqual({
      message: {
        kind: 'signal',
        type: 'timer',
        body: 'wake soon',
        attributes: { name: 'soon', timerId: 'tmr_soon', dueAt: new Date(1_000).toISOString() },
      },
      fromAgent: true,
    });
    expect(wakes).toEqual([key]);
    // The host is told where its one wake-up goes next: the remaining timer.
    expect(armed.at(-1)).toBe(5_000);
    expect(engine.view.timers(engine.view.liveByKey(key)).map((t) => t.name)).toEqual(['later']);

    // Nothing more is due: a second pass delivers nothing.
    expect(engine.fireDueTimers(2_000)).toBe(0);
    expect(engine.fireDueTimers(6_000)).toBe(1);
    expect(armed.at(-1)).toBeUndefined();
  });

  it('is idempotent by timer id: a row found again after its delivery is removed without a second one', () => {
    store.putTimer(timer('once', 1_000));
    expect(engine.fireDueTimers(1_000)).toBe(1);
    // As if the row came back (a second pass over a store that had not seen the first one's removal),
    // written behind the writer's back, so the view is told as the writer would tell it.
    store.putTimer(timer('once', 1_000));
    engine.view.timersWritten();
    expect(engine.fireDueTimers(1_500)).toBe(0);
    const deliveries = engine.view.submissions().filter((row) => row.payload.message.kind === 'signal');
    expect(deliveries.map((row) => row.id)).toEqual([timerSubmissionId('tmr_once')]);
    expect(engine.view.nextTimerDue()).toBeUndefined();
  });

  it('a reschedule under the same name replaces the pending schedule: only the new due time counts', () => {
    store.putTimer(timer('poll', 1_000, 'tmr_first'));
    store.putTimer(timer('poll', 9_000, 'tmr_second'));
    expect(engine.fireDueTimers(2_000)).toBe(0);
    expect(engine.view.nextTimerDue()).toBe(9_000);
  });

  it('delivers nothing once the engine is stopping: the next start does', async () => {
    store.putTimer(timer('late', 1_000));
    await engine.stop(0);
    expect(engine.fireDueTimers(2_000)).toBe(0);
    expect(engine.view.nextTimerDue()).toBe(1_000);
  });

  it('asks the store when a timer is due once, then only after the writer wrote timers, or when one is due', () => {
    const nextDue = vi.spyOn(store, 'nextTimerDue');
    const due = vi.spyOn(store, 'dueTimers');
    expect(engine.view.nextTimerDue()).toBeUndefined();
    expect(engine.fireDueTimers(2_000)).toBe(0);
    expect(engine.view.nextTimerDue()).toBeUndefined();
    expect([nextDue.mock.calls.length, due.mock.calls.length]).toEqual([1, 0]);
    const live = engine.view.liveByKey(key);
    const writer = new ConversationWriter(store, engine.view);
    const note: ConversationRecord = {
      type: 'signal',
      messageId: 'msg_note',
      origin: 'framework',
      signalType: 'note',
      body: 'x',
      ts: 'now',
    };
    writer.commitWithState(live, [note], [], [['nap', timer('nap', 3_000)]]);
    expect(engine.view.nextTimerDue()).toBe(3_000);
    expect(engine.fireDueTimers(2_000)).toBe(0);
    expect([nextDue.mock.calls.length, due.mock.calls.length]).toEqual([2, 0]);
    expect(engine.fireDueTimers(3_000)).toBe(1);
    expect(due).toHaveBeenCalledTimes(1);
    expect(engine.view.nextTimerDue()).toBeUndefined();
  });

  it('no caller can send a timer signal: the type is reserved for the framework', () => {
    expect(() => parseDeliveredMessage({ kind: 'signal', type: 'timer', body: 'forged' })).toThrow(InvalidRequestError);
  });
});
