/**
 * Builds one history file for the history benchmark (bench/node/history.ts spawns it):
 *
 *   node history-build.ts <model server url> <file> <target bytes>
 *
 * 1. The seed exchanges through the public API (`start()` on the file, `dispatch()`, `read()`).
 * 2. Segments of copies through the store until the file holds `target` bytes
 *    (bench/history-segments.ts says what a copy and a segment are).
 * 3. One more real exchange through the public API, so whatever the runtime derives when it
 *    writes (a checkpoint of the fold, if it keeps one) is there as in a conversation that lived
 *    this long. If the runtime refuses it (a conversation cap), the file is still the history.
 *
 * Prints one `@@built <json>` line.
 */
import { statSync } from 'node:fs';
import { dispatch, init } from '@flue/runtime';
import { sqlite, start } from '@flue/runtime/node';
import { SqlStore } from '../../src/runtime/store/sql-store.ts';
import { conversationKey } from '../../src/runtime/store/conversation-key.ts';
import { SEED_KEYS, appendSegment, planHistory } from '../history-segments.ts';
import { HistoryAgent, historyProvider } from './history-agent.ts';
import { AGENT_NAME, INSTANCE_ID, answer, question } from './history-script.ts';

const [url, file, targetArg] = process.argv.slice(2);
if (url === undefined || file === undefined || targetArg === undefined) throw new Error('usage: history-build.ts <url> <file> <bytes>');
const target = Number(targetArg);
const started = performance.now();
const key = conversationKey(AGENT_NAME, INSTANCE_ID);

async function realExchange(label: string): Promise<string> {
  const flue = await start({ agents: [HistoryAgent], db: sqlite(file!), providers: [historyProvider(url!)], env: {} });
  try {
    const receipt = await dispatch(HistoryAgent, { id: INSTANCE_ID, message: question(label) });
    const reply = await init(HistoryAgent, { id: INSTANCE_ID }).read(receipt);
    if (reply.text !== answer(label))
      throw new Error(`real exchange ${label}: unexpected reply ${JSON.stringify(reply.text.slice(0, 200))}`);
    return 'ok';
  } catch (error) {
    return `refused: ${(error as Error).message}`;
  } finally {
    await flue.stop();
  }
}

for (const label of SEED_KEYS) {
  const outcome = await realExchange(label);
  if (outcome !== 'ok') throw new Error(`seed exchange ${label}: ${outcome}`);
}

const adapter = sqlite(file);
await adapter.migrate();
const driver = await adapter.connect();
const store = new SqlStore(driver);
const { plan, cursor: first } = planHistory(store.readBatches(key, -1).map((batch) => batch.records));
let cursor = first;
/** The database's size once the WAL is folded into it; checked only once the file and its WAL could have reached the target. */
const reached = () => {
  if (statSync(file).size + (statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0) < target) return false;
  driver.run('PRAGMA wal_checkpoint(TRUNCATE)');
  return statSync(file).size >= target;
};
while (!reached()) cursor = appendSegment(store, key, plan, cursor);
await adapter.close();
const lastRealExchange = await realExchange('built');
const bytes = statSync(file).size;
console.log(
  `@@built ${JSON.stringify({ bytes, exchanges: cursor.exchange + SEED_KEYS.length + 1, seconds: (performance.now() - started) / 1000, lastRealExchange })}`,
);
