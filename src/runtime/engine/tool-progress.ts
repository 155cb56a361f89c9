/**
 * A running tool call's `log` lines as the conversation's progress stream: each line still goes to
 * the call's logger (the `log` event), and is also committed, while the call runs, in a
 * `tool_progress` record of its own, so a client reading the stream (`read({ onEvent })`, the
 * updates view) sees it before the call's result, from any offset.
 *
 * Lines are coalesced like the turn stream's deltas (flush-policy.ts), plus one flush when the call
 * ends: while a reader follows, a chatty call costs about one row every two seconds, and a crash
 * loses at most that much; while nobody does, one row every 30 s. What is kept is bounded per call
 * and per response (store/tool-log.ts); past a bound, lines are counted and the call's last flush
 * carries one marker saying how many were dropped.
 */
import { FlushSchedule, type Following } from './flush-policy.ts';
import {
  TOOL_LOG_MAX_CHARS,
  TOOL_LOG_MAX_LINES,
  TOOL_LOG_RESPONSE_MAX_CHARS,
  TOOL_LOG_RESPONSE_MAX_LINES,
  type ToolLogLine,
  droppedLinesMarker,
  logLine,
} from '../store/tool-log.ts';
import type { RecordOf } from '../store/records.ts';
import type { FlueLogger } from '../common/types.ts';

/**
 * What every call of one response has kept so far, against the per-response bounds: starting from
 * what the log already holds for the response (earlier attempts and slices), plus this attempt's.
 */
export class ProgressBudget {
  lines: number;
  chars: number;
  readonly maxLines: number;
  readonly maxChars: number;

  constructor(
    used: { lines: number; chars: number } = { lines: 0, chars: 0 },
    maxLines = TOOL_LOG_RESPONSE_MAX_LINES,
    maxChars = TOOL_LOG_RESPONSE_MAX_CHARS,
  ) {
    this.lines = used.lines;
    this.chars = used.chars;
    this.maxLines = maxLines;
    this.maxChars = maxChars;
  }

  /** Takes room for one line of `size`, or says there is none. */
  take(size: number): boolean {
    if (this.lines >= this.maxLines || this.chars + size > this.maxChars) return false;
    this.lines++;
    this.chars += size;
    return true;
  }
}

export interface ProgressOptions {
  /** The call the lines are attributed to. */
  call: Pick<RecordOf<'tool_progress'>, 'stepId' | 'messageId' | 'submissionId' | 'toolCallId' | 'toolName'>;
  budget: ProgressBudget;
  /** Appends one record (one batch). */
  commit(record: RecordOf<'tool_progress'>): void;
  /** Whether readers follow the conversation's log: how soon lines are committed. */
  following: Following;
  /** The attempt's signal: once aborted, nothing more is written (the runtime may be stopping). */
  signal: AbortSignal;
}

/**
 * The `log` a call's tool receives, and `finish()`, which the call's end runs before its result is
 * committed (so every progress record of a call precedes its `tool_results`).
 */
export function progressLogger(inner: FlueLogger, options: ProgressOptions): { log: FlueLogger; finish(): void } {
  const { call, budget, signal } = options;
  let pending: ToolLogLine[] = [];
  let kept = 0;
  let chars = 0;
  let dropped = 0;
  let finished = false;
  const flush = () => {
    schedule.flushed();
    if (pending.length === 0) return;
    const lines = pending;
    pending = [];
    options.commit({ type: 'tool_progress', ...call, lines });
  };
  const schedule = new FlushSchedule(flush, options.following, () => signal.aborted);
  const write = (level: ToolLogLine['level']) => (message: string, attributes?: Record<string, unknown>) => {
    inner[level](message, attributes);
    // A line written after the call returned (a promise the tool left running) has no call to join.
    if (finished) return;
    const { line, size } = logLine(level, message, attributes);
    if (kept >= TOOL_LOG_MAX_LINES || chars + size > TOOL_LOG_MAX_CHARS || !budget.take(size)) {
      dropped++;
      return;
    }
    kept++;
    chars += size;
    pending.push(line);
    schedule.held();
  };
  return {
    log: { info: write('info'), warn: write('warn'), error: write('error') },
    finish() {
      if (finished) return;
      finished = true;
      if (dropped > 0) pending.push(droppedLinesMarker(dropped));
      schedule.end();
      if (!signal.aborted) flush();
    },
  };
}
