/**
 * `useTimer()` on Node, through the public API: a timer an agent schedules wakes its own
 * conversation with a `timer` signal read through `useDelivery()`, recorded in the log; a
 * cancelled one never fires; timers survive a `stop()`/`start()` restart (overdue ones fire at
 * start, the rest when due) and a crash of the response that scheduled them, firing exactly once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as v from 'valibot';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type DeliveryOrigin, dispatch, init, useAgentStart, useDelivery, useModel, useTimer, useTool } from '@flue/runtime';
import { sqlite } from '@flue/runtime/node';
import { type CrashHarness, crashHarness, scriptedProvider } from '@flue/runtime/testing';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

const ctx = useScriptedRuntime();

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'flue-timers-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Fired {
  name: string;
  timerId: string;
  body: string;
  origin: DeliveryOrigin;
}

/** Timer deliveries the agent started a response for, in this process. */
const fired: Fired[] = [];
let waiters: (() => void)[] = [];
/** Resolves once `count` timer deliveries have started a response. */
function firedCount(count: number): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if (fired.length < count) return false;
      resolve();
      return true;
    };
    if (!check()) waiters.push(() => void check());
  });
}
/** The due times `schedule()` answered, by timer name. */
const dueAts = new Map<string, number>();

function Reminder() {
  useModel('anthropic/claude-haiku-4-5');
  const delivery = useDelivery();
  const timers = useTimer();
  useAgentStart(() => {
    if (delivery.kind !== 'signal' || delivery.type !== 'timer') return;
    fired.push({ name: delivery.attributes!.name!, timerId: delivery.attributes!.timerId!, body: delivery.body, origin: delivery.origin });
    for (const wake of waiters) wake();
  });
  useTool({
    name: 'remind',
    description: 'Schedules a reminder.',
    input: v.object({ name: v.string(), inMs: v.number(), body: v.string() }),
    run({ data }) {
      const timer = timers.schedule(data.name, { inMs: data.inMs, body: data.body });
      dueAts.set(timer.name, Date.parse(timer.dueAt));
      return timer.dueAt;
    },
  });
  useTool({
    name: 'forget',
    description: 'Cancels a reminder.',
    input: v.object({ name: v.string() }),
    run({ data }) {
      return timers.cancel(data.name) ? 'cancelled' : 'nothing pending';
    },
  });
  return `Pending reminders: ${timers.pending.map((timer) => timer.name).join(', ') || 'none'}.`;
}

afterEach(() => {
  fired.length = 0;
  waiters = [];
  dueAts.clear();
});

const remind = (name: string, inMs: number, body = `${name} is due.`) => ({ name: 'remind', arguments: { name, inMs, body } });

describe('useTimer() on Node', () => {
  it('a due timer delivers a timer signal the agent reads through useDelivery(), recorded in the log the model reads', async () => {
    await ctx.start([Reminder]);
    ctx.server.script({ toolCalls: [remind('tea', 30, 'Tea is ready.')] }, { text: 'I will remind you.' }, { text: 'Your tea is ready.' });
    const handle = init(Reminder, { id: 'tea' });
    // A timer due while its conversation is busy joins the response at a turn boundary, like any
    // delivery; either way the first reply says what the first answer said.
    expect((await handle.read(await handle.dispatch('Remind me about the tea.'))).text).toContain('I will remind you.');

    await firedCount(1);
    expect(fired).toEqual([{ name: 'tea', timerId: expect.stringMatching(/^tmr_/), body: 'Tea is ready.', origin: 'agent' }]);
    // The delivery is a submission named by the timer: read it like any other.
    expect((await handle.read(`sub_${fired[0]!.timerId}`)).text).toContain('Your tea is ready.');
    const woken = ctx.server.requests.find((request) => request.messages.some((m) => m.content.includes('type="timer"')))!;
    const wake = woken.messages.find((m) => m.content.includes('type="timer"'))!;
    expect(wake.role).toBe('user');
    expect(wake.content).toContain('name="tea"');
    expect(wake.content).toContain('Tea is ready.');
    // The render after the fire sees no pending timer.
    expect(woken.system).toContain('Pending reminders: none.');
  });

  it('a cancelled timer never fires; a reschedule replaces the earlier one; the render sees what is pending', async () => {
    await ctx.start([Reminder]);
    ctx.server.script(
      // Due well after the response ends, so the forget and the reschedule land first.
      { toolCalls: [remind('early', 1500), remind('late', 1600), remind('moved', 1400)] },
      { toolCalls: [{ name: 'forget', arguments: { name: 'early' } }, remind('moved', 1700)] },
      { text: 'Done.' },
      { text: 'Late handled.' },
      { text: 'Moved handled.' },
    );
    const handle = init(Reminder, { id: 'cancel' });
    expect((await handle.read(await handle.dispatch('Set them up.'))).text).toBe('Done.');
    expect(ctx.server.requests[1]!.system).toContain('Pending reminders: moved, early, late.');
    expect(ctx.server.requests[2]!.system).toContain('Pending reminders: late, moved.');
    const forget = ctx.server.requests[2]!.messages.find((m) => m.role === 'tool' && m.content.includes('cancelled'));
    expect(forget).toBeDefined();

    await firedCount(2);
    // Due order: 'early' would have come first; 'moved' fires at its new time, once.
    expect(fired.map((f) => f.name)).toEqual(['late', 'moved']);
    expect((await handle.read(`sub_${fired[1]!.timerId}`)).text).toBe('Moved handled.');
  });

  it('survives stop()/start(): a timer due while no process ran fires at start, a later one when it is due', async () => {
    const db = join(dir, 'restart.db');
    let flue = await ctx.start([Reminder], { db: sqlite(db) });
    ctx.server.script({ toolCalls: [remind('soon', 600), remind('later', 1200)] }, { text: 'Scheduled.' });
    const handle = init(Reminder, { id: 'restart' });
    expect((await handle.read(await handle.dispatch('Remind me twice.'))).text).toBe('Scheduled.');
    await flue.stop();
    expect(fired).toEqual([]);

    // Down until the first timer is overdue (the thing under test is wall-clock time passing).
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, dueAts.get('soon')! - Date.now()) + 20));
    ctx.server.script({ text: 'Soon handled.' }, { text: 'Later handled.' });
    flue = await ctx.start([Reminder], { db: sqlite(db) });
    await firedCount(1);
    expect(fired.map((f) => f.name)).toEqual(['soon']);
    await firedCount(2);
    expect(fired.map((f) => f.name)).toEqual(['soon', 'later']);
    // Not before it was due: the restarted runtime armed its wake-up for the pending timer.
    expect((await handle.read(`sub_${fired[1]!.timerId}`)).text).toBe('Later handled.');
    const laterRequest = ctx.server.requests.at(-1)!;
    expect(laterRequest.receivedAt).toBeGreaterThanOrEqual(dueAts.get('later')!);
  });
});

describe('useTimer() across crashes', () => {
  let lab: CrashHarness | undefined;
  afterEach(async () => {
    await lab?.close();
    lab = undefined;
  });

  it('a crash after the scheduling step, then one in the timer delivery: the timer is kept once and delivered once', async () => {
    lab = await crashHarness({
      agents: [Reminder],
      providers: [scriptedProvider({ baseUrl: ctx.server.url, id: 'anthropic', models: ['claude-haiku-4-5'], api: 'anthropic-messages' })],
      env: {},
      path: join(dir, 'crash.db'),
    });
    ctx.server.script(
      // Due after the first crash's recovery, so the second crash is armed before it fires.
      { toolCalls: [{ id: 'call_remind', ...remind('ping', 1500) }] },
      { text: 'Scheduled (cut off).' }, // the crash lands here: the tool batch and its timer are committed
      { text: 'Scheduled.' },
    );
    lab.crashAt({ point: 'model' });
    const receipt = await dispatch(Reminder, { id: 'crashy', message: 'Ping me.' });
    await lab.crashed;
    await lab.restart();
    const first = await lab.settle();
    // The retried response found its tool call recorded: it did not run the tool (or schedule) again.
    expect(first.toolRuns).toEqual({ remind: 1 });
    expect(first.submissions.map((s) => [s.id, s.outcome, s.settlements])).toEqual([[receipt.submissionId, 'completed', 1]]);

    // The timer's own response dies mid-stream; the restarted runtime resumes that delivery.
    ctx.server.script({ text: 'Ping (cut off).' }, { text: 'Ping handled.' });
    lab.crashAt({ point: 'model' });
    await lab.crashed;
    await lab.restart();
    const report = await lab.settle();
    const timerDeliveries = report.submissions.filter((s) => s.id.startsWith('sub_tmr_'));
    expect(timerDeliveries.map((s) => [s.outcome, s.settlements, s.attempts])).toEqual([['completed', 1, 2]]);
    expect(new Set(fired.map((f) => f.timerId))).toEqual(new Set([timerDeliveries[0]!.id.slice('sub_'.length)]));
    expect((await init(Reminder, { id: 'crashy' }).read(timerDeliveries[0]!.id)).text).toBe('Ping handled.');
  });
});
