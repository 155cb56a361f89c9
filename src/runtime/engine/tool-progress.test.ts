import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ProgressBudget, progressLogger } from './tool-progress.ts';
import type { RecordOf } from '../store/records.ts';
import { TOOL_LOG_MAX_CHARS, TOOL_LOG_MAX_LINES } from '../store/tool-log.ts';
import type { FlueLogger } from '../common/types.ts';
import type { Following } from './flush-policy.ts';

const silent: FlueLogger = { info: () => {}, warn: () => {}, error: () => {} };
/** A reader follows the whole time: lines are committed on the followed schedule. */
const followed: Following = { followed: true, onFollow: () => () => {} };
const call = (id: string) => ({ stepId: 'step_1', messageId: 'msg_1', submissionId: 'sub_1', toolCallId: id, toolName: 'crawl' });

let committed: RecordOf<'tool_progress'>[];
beforeEach(() => {
  vi.useFakeTimers();
  committed = [];
});
afterEach(() => vi.useRealTimers());

function logger(id = 'call_1', budget = new ProgressBudget(), signal = new AbortController().signal) {
  return progressLogger(silent, { call: call(id), budget, signal, following: followed, commit: (record) => void committed.push(record) });
}
const messages = () => committed.map((record) => record.lines.map((line) => line.message));

describe('progressLogger', () => {
  it("coalesces a call's lines: the first flush after 250 ms, then at doubling intervals, and the rest when the call ends", () => {
    const progress = logger();
    progress.log.info('a', { page: 1 });
    progress.log.warn('b');
    expect(committed).toEqual([]);
    vi.advanceTimersByTime(250);
    expect(committed).toEqual([
      {
        type: 'tool_progress',
        ...call('call_1'),
        lines: [
          { level: 'info', message: 'a', attributes: { page: 1 }, timestamp: expect.any(String) },
          { level: 'warn', message: 'b', timestamp: expect.any(String) },
        ],
      },
    ]);
    progress.log.error('c');
    vi.advanceTimersByTime(499);
    expect(committed).toHaveLength(1);
    vi.advanceTimersByTime(1);
    progress.log.info('d');
    progress.finish();
    expect(messages()).toEqual([['a', 'b'], ['c'], ['d']]);
    // Nothing is written once the call ended, and a call that logged nothing writes nothing.
    progress.log.info('late');
    logger('call_2').finish();
    vi.runAllTimers();
    expect(committed).toHaveLength(3);
  });

  it('keeps at most the per-call lines, then one marker with the count of the dropped ones', () => {
    const progress = logger();
    for (let i = 0; i < TOOL_LOG_MAX_LINES + 50; i++) progress.log.info(`line ${i}`);
    progress.finish();
    const lines = committed.flatMap((record) => record.lines);
    expect(lines).toHaveLength(TOOL_LOG_MAX_LINES + 1);
    expect(lines[TOOL_LOG_MAX_LINES - 1]!.message).toBe(`line ${TOOL_LOG_MAX_LINES - 1}`);
    expect(lines[TOOL_LOG_MAX_LINES]).toMatchObject({
      level: 'warn',
      message: '… 50 more log line(s) of this call dropped',
      attributes: { dropped: 50 },
    });
    // A chatty call writing in one burst costs one row.
    expect(committed).toHaveLength(1);
  });

  it('drops a line past the per-call bytes, and shares the per-response budget between calls', () => {
    const budget = new ProgressBudget(undefined, 3);
    const first = logger('call_1', budget);
    first.log.info('x'.repeat(TOOL_LOG_MAX_CHARS));
    first.log.info('one');
    first.log.info('two');
    first.finish();
    const second = logger('call_2', budget);
    second.log.info('three');
    second.log.info('four');
    second.finish();
    expect(committed.map((record) => [record.toolCallId, record.lines.map((line) => line.message)])).toEqual([
      ['call_1', ['one', 'two', '… 1 more log line(s) of this call dropped']],
      ['call_2', ['three', '… 1 more log line(s) of this call dropped']],
    ]);
  });

  it('starts the per-response budget from what the log already holds for the response', () => {
    const progress = logger('call_1', new ProgressBudget({ lines: 999, chars: 10 }));
    progress.log.info('the thousandth');
    progress.log.info('one too many');
    progress.finish();
    expect(messages()).toEqual([['the thousandth', '… 1 more log line(s) of this call dropped']]);
  });

  it('writes nothing once the attempt is aborted (the runtime may be stopping)', () => {
    const abort = new AbortController();
    const progress = logger('call_1', new ProgressBudget(), abort.signal);
    progress.log.info('before');
    abort.abort();
    vi.runAllTimers();
    progress.finish();
    expect(committed).toEqual([]);
  });

  it('still emits every line through the call logger, kept or not', () => {
    const seen: string[] = [];
    const inner: FlueLogger = { info: (m) => void seen.push(m), warn: (m) => void seen.push(m), error: (m) => void seen.push(m) };
    const progress = progressLogger(inner, {
      call: call('c'),
      budget: new ProgressBudget(undefined, 1),
      signal: new AbortController().signal,
      following: followed,
      commit: () => {},
    });
    progress.log.info('kept');
    progress.log.error('dropped');
    expect(seen).toEqual(['kept', 'dropped']);
  });
});
