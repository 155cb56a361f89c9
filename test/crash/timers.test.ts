/**
 * Durable timers across a killed process (SIGKILL, no drain): a process schedules two timers, the
 * first fires and its delivery's process is killed mid-response; a new process on the same file
 * recovers that delivery (exactly one submission for the timer, settled once) and fires the second
 * timer, which the dead process left pending, when it is due.
 */
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import type { DispatchReceipt } from '@flue/runtime';
import { inspectDb, poll, sideEvents, streamOf } from './harness.ts';
import { expectSettledExactlyOnce, pidOf, replyOf, useCrashSuite } from './suite.ts';
import { storeRows } from '../support/store-rows.ts';

const t = useCrashSuite();

function pendingTimers(db: string): { name: string; id: string }[] {
  const reader = new DatabaseSync(db, { readOnly: true, timeout: 5_000 });
  try {
    return storeRows(reader, 'SELECT name, id FROM flue_timers ORDER BY due_at').map((row) => ({
      name: String(row.name),
      id: String(row.id),
    }));
  } finally {
    reader.close();
  }
}

describe('timers across a killed process', () => {
  it('a delivery cut off by SIGKILL is recovered once, and a timer the dead process left pending fires in the next', async () => {
    const { server, s } = t;
    server.script(
      {
        toolCalls: [
          { id: 'call_remind', name: 'remind', arguments: { name: 'ping', inMs: 200 } },
          { id: 'call_later', name: 'remind', arguments: { name: 'later', inMs: 2_500 } },
        ],
      },
      { text: 'Scheduled.' },
      { text: 'Ping handled.' },
      { text: 'Later handled.' },
      { text: 'spare step (unexpected extra model call)' },
    );
    const stream = streamOf('TimerAgent', 'timers');
    const c1 = t.child(
      { agent: 'TimerAgent', id: 'timers', dispatch: ['Remind me twice.'], then: 'hold' },
      { FLUE_CRASH_BLOCK: 'timer-fired' },
    );
    const first = (await c1.waitFor('receipt')).receipt;
    await poll('the ping timer to fire', () => sideEvents(s.side).some((e) => e.event === 'timer-fired'));
    const before = inspectDb(s.db, stream);
    const ping = before.submissions.find((row) => row.id.startsWith('sub_tmr_'))!;
    expect(ping).toMatchObject({ status: 'running' });
    // The fired timer's row went with its admission; the later one is still pending.
    const [later] = pendingTimers(s.db);
    expect(pendingTimers(s.db).map((timer) => timer.name)).toEqual(['later']);
    await c1.kill();

    const receiptFor = (submissionId: string): DispatchReceipt => ({ ...first, submissionId });
    const lines = await t.runToEnd({ agent: 'TimerAgent', id: 'timers', read: [receiptFor(ping.id), receiptFor(`sub_${later!.id}`)] });
    const c2pid = pidOf(lines);

    // Overdue by the time the new process is up, `later` may join ping's recovered response.
    expect(replyOf(lines, ping.id)).toContain('Ping handled.');
    expect(replyOf(lines, `sub_${later!.id}`)).toContain('Later handled.');
    // useAgentStart is at-least-once (the dead process never recorded its run); the deliveries are once each.
    expect(sideEvents(s.side).map((e) => [e.name, e.pid])).toEqual([
      ['ping', c1.pid],
      ['ping', c2pid],
      ['later', c2pid],
    ]);
    const view = inspectDb(s.db, stream);
    expect(view.submissions.filter((row) => row.id.startsWith('sub_tmr_')).map((row) => row.id)).toEqual([ping.id, `sub_${later!.id}`]);
    expectSettledExactlyOnce(view, [first.submissionId, ping.id, `sub_${later!.id}`]);
    expect(pendingTimers(s.db)).toEqual([]);
    expect(server.requests.length).toBe(4);
  });
});
