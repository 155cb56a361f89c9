/**
 * Replay cost: reading the last 10 batches of a 100-batch and of a 10,000-batch conversation
 * through the updates view, in the same run (issue 4). Reading from an offset should cost work
 * proportional to the batches after it, not to the whole history.
 *
 *   npm run bench:replay
 *
 * Conversations are written through the real store with the record shapes a model turn writes
 * (user message, streamed step, tool results, settlement), then read with `engine.updates`.
 */
import { sqlite } from '@flue/runtime/node';
import { ConversationEngine } from '../../src/runtime/engine/engine.ts';
import { AgentRegistry } from '../../src/runtime/authoring/identity.ts';
import type { ConversationRecord } from '../../src/runtime/store/records.ts';
import { SqlStore } from '../../src/runtime/store/sql-store.ts';
import { median, saveRows } from '../results.ts';
import { conversationKey } from '../../src/runtime/store/conversation-key.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const TAIL = 10;

function Agent() {
  return 'x';
}

function turnBatches(turn: number): ConversationRecord[][] {
  const ts = new Date().toISOString();
  const messageId = `msg_${turn}`;
  const stepId = `step_${turn}`;
  const submissionId = `sub_${turn}`;
  return [
    [{ type: 'user_message', messageId: `in_${turn}`, submissionId, body: `question ${turn}`, ts }],
    [
      { type: 'assistant_started', messageId, stepId, submissionId, attemptId: 'a', ts },
      { type: 'assistant_delta', stepId, messageId, kind: 'text', block: 0, delta: `answer ${turn} `.repeat(20) },
      {
        type: 'assistant_completed',
        stepId,
        messageId,
        submissionId,
        message: {
          role: 'assistant',
          content: [{ type: 'text', text: `answer ${turn} `.repeat(20) }],
          api: 'anthropic-messages',
          provider: 'anthropic',
          model: 'm',
          usage: {
            input: 1,
            output: 1,
            cacheRead: 0,
            cacheWrite: 0,
            totalTokens: 2,
            cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
          },
          stopReason: 'stop',
          timestamp: Date.now(),
        },
        ts,
      },
    ],
    [{ type: 'submission_settled', submissionId, outcome: 'completed', answeredBySubmissionId: submissionId, ts }],
  ];
}

async function conversation(batches: number): Promise<{ engine: ConversationEngine; id: string }> {
  const adapter = sqlite();
  await adapter.migrate();
  const store = new SqlStore(await adapter.connect());
  const registry = new AgentRegistry();
  registry.register(Agent);
  const engine = new ConversationEngine({ store, registry, env: {}, wake: () => {} });
  const id = `c${batches}`;
  const stream = conversationKey('Agent', id);
  store.createConversation({ key: stream, agent: 'Agent', instanceId: id, incarnation: 'inc_bench' });
  store.transaction(() => {
    store.append(stream, [{ type: 'conversation_created', conversationId: 'conv_bench', uid: 'inst_bench', ts: new Date().toISOString() }]);
    let written = 1;
    for (let turn = 0; written < batches; turn++) {
      for (const batch of turnBatches(turn)) {
        if (written++ >= batches) break;
        store.append(stream, batch);
      }
    }
  });
  return { engine, id };
}

async function timeTailRead(engine: ConversationEngine, id: string): Promise<number> {
  const started = performance.now();
  const head = engine.streamHead('Agent', id)!.head;
  const result = await engine.updates('Agent', id, head - TAIL, { waitMs: 0, maxBatches: 100 });
  const elapsed = performance.now() - started;
  if (result.kind !== 'ok' || result.nextSeq !== head || result.chunks.length === 0) throw new Error('tail read did not reach the head');
  return elapsed;
}

const small = await conversation(100);
const large = await conversation(10_000);
// The first read of each conversation folds it once into memory (the engine's cache, what a woken
// Durable Object does once); the figure is the steady-state cost of a reader asking for what is new.
const coldSmall = await timeTailRead(small.engine, small.id);
const coldLarge = await timeTailRead(large.engine, large.id);
const smallTimes: number[] = [];
const largeTimes: number[] = [];
for (let run = 0; run < RUNS; run++) {
  smallTimes.push(await timeTailRead(small.engine, small.id));
  largeTimes.push(await timeTailRead(large.engine, large.id));
}
const [s, l] = [median(smallTimes), median(largeTimes)];
const ratio = l / s;
console.log(`Replay: read the last ${TAIL} batches through the updates view (median of ${RUNS} runs, Node, node:sqlite in memory)`);
console.log('| figure | ours | baseline | ratio | target | met? |');
console.log('| --- | --- | --- | --- | --- | --- |');
console.log(
  `| last ${TAIL} of 10,000 batches vs last ${TAIL} of 100 | ${l.toFixed(3)} ms | ${s.toFixed(3)} ms | ${ratio.toFixed(2)}× | ≤ 1.5× | ${ratio <= 1.5 ? 'yes' : 'NO'} |`,
);
saveRows('replay', `Node, node:sqlite in memory, medians of ${RUNS} runs`, [
  {
    figure: `read the last ${TAIL} batches of a 10,000-batch conversation vs of a 100-batch one`,
    ours: `${l.toFixed(3)} ms`,
    baseline: `${s.toFixed(3)} ms`,
    ratio: `${ratio.toFixed(2)}×`,
    target: '≤ 1.5×',
    met: ratio <= 1.5,
  },
]);
console.log(
  `(first read after a cold start, folding the log once: ${coldSmall.toFixed(1)} ms for 100 batches, ${coldLarge.toFixed(1)} ms for 10,000)`,
);
