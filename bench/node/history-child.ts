/**
 * One measured wake of the history benchmark (bench/node/history.ts spawns it, one process per
 * measurement, so the memory figures are this process's alone):
 *
 *   node --expose-gc history-child.ts <model server url> <file> <question key>
 *
 * It starts the runtime on a copy of a history file through the public API (`start()` with
 * `sqlite()`), then sends the long-lived conversation one message (`dispatch()`) and waits for its
 * settled reply (`read()`): the wake (the conversation is not in memory yet) and the turn. It prints
 * one `@@result <json>` line with its own clock readings and memory; the parent matches the first
 * model request the scripted server received for this question. A refused message is a result too.
 */
import { dispatch, init } from '@flue/runtime';
import { sqlite, start } from '@flue/runtime/node';
import { HistoryAgent, historyProvider } from './history-agent.ts';
import { INSTANCE_ID, answer, question } from './history-script.ts';

export interface WakeResult {
  /** Epoch milliseconds (fractional) right before `dispatch()`. */
  dispatchedAt: number;
  receiptMs?: number;
  settledMs?: number;
  /** RSS before `dispatch()` (after a full GC), then the peak and the RSS once settled (after a full GC). */
  rssBefore: number;
  rssPeak: number;
  rssAfter: number;
  heapBefore: number;
  heapAfter: number;
  /** Set when the message was refused or the reply was wrong. */
  error?: string;
  errorAfterMs?: number;
}

const [url, file, key] = process.argv.slice(2);
if (url === undefined || file === undefined || key === undefined) throw new Error('usage: history-child.ts <url> <file> <key>');
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('history-child.ts needs --expose-gc');
const now = () => performance.timeOrigin + performance.now();

const flue = await start({ agents: [HistoryAgent], db: sqlite(file), providers: [historyProvider(url)], env: {} });
gc();
const rssBefore = process.memoryUsage().rss;
const heapBefore = process.memoryUsage().heapUsed;
const dispatchedAt = now();
let result: WakeResult;
try {
  const receipt = await dispatch(HistoryAgent, { id: INSTANCE_ID, message: question(key) });
  const receiptMs = now() - dispatchedAt;
  const reply = await init(HistoryAgent, { id: INSTANCE_ID }).read(receipt);
  const settledMs = now() - dispatchedAt;
  const rssPeak = process.resourceUsage().maxRSS * 1024;
  gc();
  const memory = process.memoryUsage();
  result = { dispatchedAt, receiptMs, settledMs, rssBefore, rssPeak, rssAfter: memory.rss, heapBefore, heapAfter: memory.heapUsed };
  if (reply.text !== answer(key)) result.error = `unexpected reply ${JSON.stringify(reply.text.slice(0, 200))}`;
} catch (error) {
  const errorAfterMs = now() - dispatchedAt;
  const rssPeak = process.resourceUsage().maxRSS * 1024;
  const memory = process.memoryUsage();
  const code = (error as { type?: unknown }).type;
  result = {
    dispatchedAt,
    rssBefore,
    rssPeak,
    rssAfter: memory.rss,
    heapBefore,
    heapAfter: memory.heapUsed,
    error: `${typeof code === 'string' ? `${code}: ` : ''}${(error as Error).message}`,
    errorAfterMs,
  };
}
await flue.stop();
console.log(`@@result ${JSON.stringify(result)}`);
