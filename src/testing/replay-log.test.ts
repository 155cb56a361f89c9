import { describe, expect, it } from 'vitest';
import type { ConversationRecord } from '../runtime/store/records.ts';
import type { AssistantMessage } from '../runtime/model/model-types.ts';
import { divergences, loggedDeliveries } from './replay-log.ts';

const ts = '2026-01-01T00:00:00.000Z';
const usage = {
  input: 1,
  output: 1,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 2,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

function answer(text: string, calls: { id: string; name: string; arguments: Record<string, unknown> }[] = []): AssistantMessage {
  return {
    role: 'assistant',
    content: [...(text ? [{ type: 'text' as const, text }] : []), ...calls.map((call) => ({ type: 'toolCall' as const, ...call }))],
    api: 'anthropic-messages',
    provider: 'anthropic',
    model: 'm',
    usage,
    stopReason: calls.length ? 'toolUse' : 'stop',
    timestamp: 0,
  } as AssistantMessage;
}

/** One delivery: its input, a turn calling `lookup` with `args` answered `result`, then a final text. */
function log(
  sub: string,
  options: { args?: Record<string, unknown>; result?: string; text?: string; outcome?: 'completed' | 'failed' } = {},
) {
  const records: ConversationRecord[] = [
    { type: 'user_message', messageId: `in_${sub}`, submissionId: sub, body: 'q', ts },
    {
      type: 'assistant_completed',
      stepId: `s1_${sub}`,
      messageId: 'm',
      submissionId: sub,
      message: answer('', [{ id: `c_${sub}`, name: 'lookup', arguments: options.args ?? { q: 1 } }]),
      ts,
    },
    {
      type: 'tool_results',
      stepId: `s1_${sub}`,
      messageId: 'm',
      submissionId: sub,
      outcomes: [{ toolCallId: `c_${sub}`, toolName: 'lookup', isError: false, content: options.result ?? '"a"' }],
      ts,
    },
    { type: 'assistant_completed', stepId: `s2_${sub}`, messageId: 'm', submissionId: sub, message: answer(options.text ?? 'done'), ts },
    { type: 'submission_settled', submissionId: sub, outcome: options.outcome ?? 'completed', ts },
  ];
  return loggedDeliveries(records);
}

describe('loggedDeliveries', () => {
  it('reads each delivery with its turns, tool calls, results, reply and outcome', () => {
    const [delivery] = log('a');
    expect(delivery).toMatchObject({ submissionId: 'a', reply: 'done', outcome: 'completed' });
    expect(delivery!.turns.map((turn) => [turn.toolCalls.map((call) => call.name), turn.results.map((r) => r.content), turn.text])).toEqual(
      [
        [['lookup'], ['"a"'], ''],
        [[], [], 'done'],
      ],
    );
  });
});

describe('loggedDeliveries: compactions', () => {
  it('keeps each compaction summary with the delivery whose response compacted, an older unnamed one with the latest delivery', () => {
    const records: ConversationRecord[] = [
      { type: 'user_message', messageId: 'in_a', submissionId: 'a', body: 'q', ts },
      { type: 'compaction', summary: 'first', firstKept: 1, tokensBefore: 9, submissionId: 'a', ts },
      { type: 'user_message', messageId: 'in_b', submissionId: 'b', body: 'q', ts },
      { type: 'compaction', summary: 'second', firstKept: 2, tokensBefore: 9, ts },
    ];
    expect(loggedDeliveries(records).map((delivery) => delivery.summaries)).toEqual([['first'], ['second']]);
  });
});

describe('divergences', () => {
  it('none between a log and a replay that did the same, whatever the ids', () => {
    expect(divergences(log('a'), log('b'))).toEqual([]);
  });

  it('names the first difference of a delivery and its turn', () => {
    expect(divergences(log('a'), log('b', { args: { q: 2 } }))).toMatchObject([
      { turn: 0, kind: 'tool_arguments', recorded: { q: 1 }, replayed: { q: 2 } },
    ]);
    expect(divergences(log('a'), log('b', { result: '"z"' }))).toMatchObject([{ turn: 0, kind: 'tool_results' }]);
    expect(divergences(log('a'), log('b', { text: 'other' }))).toMatchObject([
      { turn: 1, kind: 'reply_text', recorded: 'done', replayed: 'other' },
    ]);
    expect(divergences(log('a'), log('b', { outcome: 'failed' }))).toMatchObject([
      { turn: -1, kind: 'outcome', recorded: 'completed', replayed: 'failed' },
    ]);
    expect(divergences(log('a'), [])).toMatchObject([{ delivery: 0, kind: 'outcome', message: 'delivery 0 was not replayed' }]);
  });

  it('a replay with another tool or fewer model calls diverges at that turn', () => {
    const other = log('b');
    other[0]!.turns[0]!.toolCalls[0]!.name = 'search';
    expect(divergences(log('a'), other)).toMatchObject([{ turn: 0, kind: 'tool_calls', recorded: ['lookup'], replayed: ['search'] }]);
    const shorter = log('b');
    shorter[0]!.turns.pop();
    expect(divergences(log('a'), shorter)).toMatchObject([{ turn: 1, kind: 'turns', recorded: 2, replayed: 1 }]);
  });

  it("compares the tools the agent declared, not the framework's own", () => {
    const snapshot = (taskDescription: string, priceDescription: string) => ({
      tools: [
        { name: 'task', description: taskDescription, schema: 'x' },
        { name: 'price', description: priceDescription, schema: 'y' },
      ],
      skills: [],
      subagents: [],
      instructionsDigest: 'd',
      sandbox: false,
    });
    const shown = (taskDescription: string, priceDescription: string, builtinTools?: string[]) => {
      const delivery = log('b');
      for (const turn of delivery[0]!.turns) {
        turn.resources = snapshot(taskDescription, priceDescription);
        if (builtinTools) turn.builtinTools = builtinTools;
      }
      return delivery;
    };
    // A log that does not say which tools the runtime added: the framework's reserved names.
    expect(divergences(shown('Delegates.', 'Prices.'), shown('Delegates a task (reworded).', 'Prices.'))).toEqual([]);
    expect(divergences(shown('Delegates.', 'Prices.'), shown('Delegates.', 'Prices one item.'))).toMatchObject([
      { turn: 0, kind: 'tools' },
    ]);
    // A sandbox built-in the log names as added, on either side, compares by name only.
    expect(divergences(shown('Delegates.', 'Reads.'), shown('Delegates.', 'Reads a file.', ['task', 'price']))).toEqual([]);
    expect(divergences(shown('Delegates.', 'Reads.', ['task', 'price']), shown('Delegates.', 'Reads a file.'))).toEqual([]);
    const renamed = shown('Delegates.', 'Reads.', ['task', 'price']);
    renamed[0]!.turns[0]!.resources!.tools[1]!.name = 'read';
    expect(divergences(shown('Delegates.', 'Reads.', ['task', 'price']), renamed)).toMatchObject([{ turn: 0, kind: 'tools' }]);
  });
});
