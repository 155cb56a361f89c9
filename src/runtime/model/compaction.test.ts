import { describe, expect, it } from 'vitest';
import { fauxAssistantMessage, fauxText, fauxThinking, fauxToolCall } from '@earendil-works/pi-ai';
import type { AssistantMessage, FauxContentBlock, Message, ToolResultMessage, UserMessage } from '@earendil-works/pi-ai';
import {
  DEFAULT_CONTEXT_WINDOW,
  contextTokens,
  contextWindowOf,
  estimateContextTokens,
  estimateTokens,
  measureTokens,
  renderCompactionSummary,
  resolveCompactionSettings,
  shouldCompact,
  validateCompactionConfig,
} from './compaction.ts';
import {
  SPLIT_TURN_SEPARATOR,
  SUMMARY_MESSAGE_MAX_CHARS,
  appendFileLists,
  buildSummaryRequest,
  fileListsFromToolCalls,
  findCutPoint,
  joinSplitSummary,
  serializeConversation,
  summaryChunks,
  summaryInputBudget,
  summaryMaxTokens,
  summaryMessageChars,
  summaryParts,
  summaryRequestPart,
} from './summary-request.ts';

// ── Message builders ──────────────────────────────────────────────────────────────────────────

function user(text: string): UserMessage {
  return { role: 'user', content: text, timestamp: 0 };
}

function assistant(content: string | FauxContentBlock[]): AssistantMessage {
  return fauxAssistantMessage(content);
}

function toolResult(text: string, toolName = 'read'): ToolResultMessage {
  return {
    role: 'toolResult',
    toolCallId: 'call-1',
    toolName,
    content: [{ type: 'text', text }],
    isError: false,
    timestamp: 0,
  };
}

/** Text of exactly `tokens` estimated tokens. */
function sized(tokens: number, char = 'x'): string {
  return char.repeat(tokens * 4);
}

// ── Options ───────────────────────────────────────────────────────────────────────────────────

describe('validateCompactionConfig', () => {
  it('accepts false and objects, copying known fields', () => {
    expect(validateCompactionConfig(false)).toBe(false);
    expect(validateCompactionConfig({})).toEqual({});
    const input = { reserveTokens: 0, keepRecentTokens: 500, model: 'acme/small' };
    const result = validateCompactionConfig(input);
    expect(result).toEqual(input);
    expect(result).not.toBe(input);
  });

  it('treats undefined fields as absent', () => {
    expect(validateCompactionConfig({ model: undefined })).toStrictEqual({});
  });

  it.each([true, null, 'auto', 3, [], undefined])('rejects %j', (value) => {
    expect(() => validateCompactionConfig(value)).toThrow(/^\[flue\] Invalid compaction option: expected an object or false/);
  });

  it('rejects unknown keys', () => {
    expect(() => validateCompactionConfig({ reserve: 10 })).toThrow(
      '[flue] Unknown compaction option "reserve". Valid options: reserveTokens, keepRecentTokens, model, contextWindow.',
    );
  });

  it.each([
    ['reserveTokens', -1],
    ['reserveTokens', 1.5],
    ['keepRecentTokens', '100'],
    ['keepRecentTokens', Number.NaN],
  ])('rejects %s = %j', (key, value) => {
    expect(() => validateCompactionConfig({ [key]: value })).toThrow(`[flue] Invalid compaction option "${key}": expected an integer ≥ 0`);
  });

  it.each([0, 2047, 1.5, '32000', -5])('rejects contextWindow = %j, naming the field and what it takes', (value) => {
    expect(() => validateCompactionConfig({ contextWindow: value })).toThrow(
      `[flue] Invalid compaction option "contextWindow": expected the model's context window in tokens, an integer ≥ 2048, got`,
    );
  });

  it('accepts a context window', () => {
    expect(validateCompactionConfig({ contextWindow: 24000 })).toStrictEqual({ contextWindow: 24000 });
  });

  it('rejects a non-string model', () => {
    expect(() => validateCompactionConfig({ model: 5 })).toThrow('[flue] Invalid compaction option "model"');
  });
});

describe('resolveCompactionSettings', () => {
  it('defaults to 8000 kept tokens and a reserve capped at 20000', () => {
    expect(resolveCompactionSettings(undefined, { contextWindow: 200000, maxTokens: 64000 })).toStrictEqual({
      contextWindow: 200000,
      reserveTokens: 20000,
      keepRecentTokens: 8000,
    });
  });

  it('uses maxTokens as the reserve when smaller, and 20000 when maxTokens is unknown', () => {
    expect(resolveCompactionSettings({}, { contextWindow: 200000, maxTokens: 8192 }).reserveTokens).toBe(8192);
    expect(resolveCompactionSettings({}, { contextWindow: 200000, maxTokens: 0 }).reserveTokens).toBe(20000);
  });

  it('takes an unknown window (0) as the default window', () => {
    expect(contextWindowOf({ contextWindow: 0 })).toBe(DEFAULT_CONTEXT_WINDOW);
    expect(contextWindowOf({ contextWindow: 1000 })).toBe(1000);
    // 2 · 20000 >= 32768 ⇒ floor(32768 / 3); a quarter of what that leaves is under 8000
    expect(resolveCompactionSettings({}, { contextWindow: 0, maxTokens: 0 })).toStrictEqual({
      contextWindow: 32768,
      reserveTokens: 10922,
      keepRecentTokens: 5461,
    });
    // A configured window wins over the metadata and the default.
    expect(resolveCompactionSettings({ contextWindow: 24000 }, { contextWindow: 0, maxTokens: 0 })).toMatchObject({
      contextWindow: 24000,
      reserveTokens: 8000,
    });
    expect(resolveCompactionSettings({ contextWindow: 24000 }, { contextWindow: 200000, maxTokens: 0 }).contextWindow).toBe(24000);
  });

  it('keeps at most a quarter of what the reserve leaves verbatim, explicit or not (never below 256)', () => {
    expect(resolveCompactionSettings({ keepRecentTokens: 100000 }, { contextWindow: 128000, maxTokens: 8000 }).keepRecentTokens).toBe(
      30000,
    );
    expect(resolveCompactionSettings({ reserveTokens: 1900 }, { contextWindow: 2000, maxTokens: 0 }).keepRecentTokens).toBe(256);
    expect(resolveCompactionSettings({ keepRecentTokens: 20 }, { contextWindow: 2000, maxTokens: 0 }).keepRecentTokens).toBe(20);
  });

  it('shrinks the default reserve for small context windows', () => {
    // 2 · 20000 >= 40000 ⇒ floor(40000 / 3)
    expect(resolveCompactionSettings({}, { contextWindow: 40000, maxTokens: 0 }).reserveTokens).toBe(13333);
    // just above the rule: 2 · 20000 < 40001
    expect(resolveCompactionSettings({}, { contextWindow: 40001, maxTokens: 0 }).reserveTokens).toBe(20000);
    // never below 1024
    expect(resolveCompactionSettings({}, { contextWindow: 2000, maxTokens: 0 }).reserveTokens).toBe(1024);
    // the rule applies to a maxTokens-derived reserve too: 2 · 1000 >= 2000 ⇒ max(1024, 666)
    expect(resolveCompactionSettings({}, { contextWindow: 2000, maxTokens: 1000 }).reserveTokens).toBe(1024);
    // and not when the reserve is already small enough
    expect(resolveCompactionSettings({}, { contextWindow: 2000, maxTokens: 500 }).reserveTokens).toBe(500);
  });

  it('lets explicit fields override, skipping the window rule', () => {
    expect(
      resolveCompactionSettings({ reserveTokens: 1500, keepRecentTokens: 0, model: 'acme/small' }, { contextWindow: 2000, maxTokens: 500 }),
    ).toStrictEqual({ contextWindow: 2000, reserveTokens: 1500, keepRecentTokens: 0, model: 'acme/small' });
  });
});

// ── Token accounting ──────────────────────────────────────────────────────────────────────────

describe('token accounting', () => {
  it('estimates chars / 4, rounding up, and 1200 per image', () => {
    expect(estimateTokens(user('abcdefgh'))).toBe(2);
    expect(estimateTokens(user('abcdefghi'))).toBe(3);
    const withImage: UserMessage = {
      role: 'user',
      content: [
        { type: 'text', text: 'abcd' },
        { type: 'image', data: 'AAAA', mimeType: 'image/png' },
      ],
      timestamp: 0,
    };
    expect(estimateTokens(withImage)).toBe(1201);
  });

  it('counts assistant text, thinking and tool calls', () => {
    const message = assistant([fauxThinking('tttt'), fauxText('aaaa'), fauxToolCall('ab', { k: 1 })]);
    // 4 + 4 + "ab".length + '{"k":1}'.length = 8 + 2 + 7 = 17 chars ⇒ 5 tokens
    expect(estimateTokens(message)).toBe(5);
  });

  it('measures a message once: every step estimates the whole context again', () => {
    let reads = 0;
    const message = {
      role: 'user',
      get content() {
        reads++;
        return 'abcdefgh';
      },
      timestamp: 0,
    } as UserMessage;
    expect([estimateTokens(message), estimateTokens(message), estimateTokens(message)]).toStrictEqual([2, 2, 2]);
    expect(reads).toBeLessThanOrEqual(2);
    // A message made for one use is measured without being kept.
    expect(measureTokens(user('abcdefghi'))).toBe(3);
  });

  it('uses totalTokens, falling back to the sum of parts', () => {
    expect(contextTokens({ input: 1, output: 2, cacheRead: 3, cacheWrite: 4, totalTokens: 50 })).toBe(50);
    expect(contextTokens({ input: 1, output: 2, cacheRead: 3, cacheWrite: 4, totalTokens: 0 })).toBe(10);
  });

  it('anchors the context estimate on the last successful assistant usage', () => {
    const answered = assistant('done');
    answered.usage = { ...answered.usage, totalTokens: 1000 };
    const failed = assistant('x');
    failed.stopReason = 'error';
    failed.usage = { ...failed.usage, totalTokens: 99999 };
    const messages: Message[] = [user(sized(10)), answered, user(sized(7)), failed];
    expect(estimateContextTokens(messages)).toBe(1000 + 7 + estimateTokens(failed));
    expect(estimateContextTokens([user(sized(10)), user(sized(5))])).toBe(15);
  });

  it('triggers above contextWindow − reserve, never with an unknown window', () => {
    expect(shouldCompact({ contextTokens: 1501, contextWindow: 2000, reserveTokens: 500 })).toBe(true);
    expect(shouldCompact({ contextTokens: 1500, contextWindow: 2000, reserveTokens: 500 })).toBe(false);
    expect(shouldCompact({ contextTokens: 10 ** 9, contextWindow: 0, reserveTokens: 500 })).toBe(false);
  });
});

// ── Cut point ─────────────────────────────────────────────────────────────────────────────────

describe('findCutPoint', () => {
  it('cuts at a user message when one starts the kept span', () => {
    const messages: Message[] = [user(sized(100)), assistant(sized(100)), user(sized(50)), assistant(sized(50))];
    expect(findCutPoint(messages, 100)).toStrictEqual({ firstKeptIndex: 2 });
  });

  it('returns null when everything fits', () => {
    const messages: Message[] = [user(sized(10)), assistant(sized(10))];
    expect(findCutPoint(messages, 100)).toBeNull();
    expect(findCutPoint([], 0)).toBeNull();
  });

  it('returns null when the cut would fall on the first message', () => {
    const messages: Message[] = [user(sized(100)), assistant(sized(10))];
    expect(findCutPoint(messages, 105)).toBeNull();
  });

  it('never cuts at a tool result and reports the split turn start', () => {
    const messages: Message[] = [
      user(sized(50)), // 0
      assistant(sized(50)), // 1
      user(sized(10)), // 2: turn start
      assistant([fauxToolCall('read', { path: 'a' })]), // 3
      toolResult(sized(200)), // 4: the threshold is reached here
      assistant(sized(10)), // 5
    ];
    const cut = findCutPoint(messages, 150);
    expect(cut).toStrictEqual({ firstKeptIndex: 5, splitTurnStart: 2 });
    expect(messages[cut!.firstKeptIndex]!.role).not.toBe('toolResult');
  });

  it('cuts at the step that issued the tool results when only they follow the threshold (no dead end)', () => {
    const messages: Message[] = [user(sized(50)), assistant([fauxToolCall('read', { path: 'a' })]), toolResult(sized(200))];
    expect(findCutPoint(messages, 100)).toStrictEqual({ firstKeptIndex: 1, splitTurnStart: 0 });
    // Several results of one step: the cut still lands on their step.
    const many: Message[] = [
      user(sized(10)),
      assistant(sized(10)),
      user(sized(10)),
      assistant([fauxToolCall('read', { path: 'a' }), fauxToolCall('read', { path: 'b' })]),
      toolResult(sized(10)),
      toolResult(sized(5000)),
    ];
    expect(findCutPoint(many, 1000)).toStrictEqual({ firstKeptIndex: 3, splitTurnStart: 2 });
  });

  it('counts a message at most its cap, so an oversized one does not make the kept part that message alone', () => {
    const messages: Message[] = [user(sized(100)), assistant(sized(100)), user(sized(100)), assistant(sized(100)), user(sized(100000))];
    expect(findCutPoint(messages, 700)).toStrictEqual({ firstKeptIndex: 4 });
    expect(findCutPoint(messages, 700, 500)).toStrictEqual({ firstKeptIndex: 2 });
  });

  it('treats a prefix without any user message as history', () => {
    const messages: Message[] = [toolResult(sized(100)), assistant(sized(100)), assistant(sized(10))];
    expect(findCutPoint(messages, 100)).toStrictEqual({ firstKeptIndex: 1 });
  });
});

// ── Serialization and requests ────────────────────────────────────────────────────────────────

describe('serializeConversation', () => {
  it('labels each part', () => {
    const text = serializeConversation([
      user('Find the bug'),
      assistant([
        fauxThinking('look at main'),
        fauxText('Reading it.'),
        fauxToolCall('read', { path: 'src/main.ts', limit: 10 }),
        fauxToolCall('ls', {}),
      ]),
      toolResult('export const x = 1;'),
      { role: 'system', content: 'hidden instructions', timestamp: 0 },
    ]);
    expect(text).toBe(
      [
        '[User]: Find the bug',
        '[Assistant thinking]: look at main',
        '[Assistant]: Reading it.',
        '[Assistant tool calls]: read(path="src/main.ts", limit=10), ls()',
        '[Tool result]: export const x = 1;',
      ].join('\n\n'),
    );
  });

  it('skips redacted thinking and renders images as placeholders', () => {
    const redacted = assistant('visible');
    redacted.content.unshift({ type: 'thinking', thinking: 'secret', redacted: true });
    const text = serializeConversation([
      redacted,
      {
        role: 'user',
        content: [
          { type: 'text', text: 'see' },
          { type: 'image', data: 'A', mimeType: 'image/png' },
        ],
        timestamp: 0,
      },
    ]);
    expect(text).toBe('[Assistant]: visible\n\n[User]: see\n[image]');
  });

  it('truncates tool results to 2000 characters', () => {
    const long = `${'a'.repeat(2000)}${'b'.repeat(500)}`;
    const text = serializeConversation([toolResult(long)]);
    expect(text.startsWith(`[Tool result]: ${'a'.repeat(2000)}\n`)).toBe(true);
    expect(text).not.toContain('b');
    expect(text).toContain('500 more characters truncated');
    const exact = serializeConversation([toolResult('c'.repeat(2000))]);
    expect(exact).toBe(`[Tool result]: ${'c'.repeat(2000)}`);
  });

  it('truncates user or assistant text only past 20,000 characters (or the limit given)', () => {
    const long = 'u'.repeat(5000);
    expect(serializeConversation([user(long)])).toBe(`[User]: ${long}`);
    const huge = serializeConversation([user('v'.repeat(SUMMARY_MESSAGE_MAX_CHARS + 100)), assistant('w'.repeat(30000))]);
    expect(huge).toContain('[User]: ' + 'v'.repeat(SUMMARY_MESSAGE_MAX_CHARS) + '\n[… 100 more characters truncated]');
    expect(huge).toContain('10000 more characters truncated');
    expect(serializeConversation([user(long)], 1000)).toBe(`[User]: ${'u'.repeat(1000)}\n[… 4000 more characters truncated]`);
    // Tool results keep the smaller of their own limit and the one given.
    expect(serializeConversation([toolResult('t'.repeat(3000))], 1000)).toContain('2000 more characters truncated');
  });
});

describe('summaries that fit the summarizer', () => {
  it('budgets the window less the output, the previous summary and the prompt', () => {
    const budget = summaryInputBudget(200000, 20000);
    expect(budget).toBeLessThan(200000 - 2 * 16000);
    expect(budget).toBeGreaterThan(200000 - 2 * 16000 - 2000);
    expect(summaryInputBudget(2000, 1024)).toBe(1024);
    expect(summaryMessageChars(1024)).toBe(2048);
    expect(summaryMessageChars(100000)).toBe(SUMMARY_MESSAGE_MAX_CHARS);
  });

  it('splits a history into consecutive runs that each fit, every message in one run, in order', () => {
    const messages: Message[] = [];
    for (let i = 0; i < 40; i++) messages.push(user(`${i} ${sized(300)}`), assistant(sized(300)));
    messages.push(user(sized(100000)));
    const chunks = summaryChunks(messages, 4000);
    expect(chunks.length).toBeGreaterThan(5);
    expect(chunks.flat()).toStrictEqual(messages);
    for (const chunk of chunks) {
      const request = buildSummaryRequest({ messages: chunk, previousSummary: 'earlier', maxMessageChars: summaryMessageChars(4000) });
      expect(Math.ceil(request.userText.length / 4)).toBeLessThanOrEqual(4000 + 1000);
    }
    expect(summaryChunks([], 4000)).toStrictEqual([]);
    expect(summaryChunks(messages.slice(0, 4), 4000)).toStrictEqual([messages.slice(0, 4)]);
  });
});

describe('buildSummaryRequest', () => {
  const sections = [
    '## Goal',
    '## Constraints & Preferences',
    '## Progress',
    '### Done',
    '### In Progress',
    '### Blocked',
    '## Key Decisions',
    '## Next Steps',
    '## Critical Context',
  ];

  it('wraps the conversation and asks for the template, in order', () => {
    const request = buildSummaryRequest({ messages: [user('hello')] });
    expect(request.systemPrompt).toMatch(/only the summary/i);
    expect(request.userText.startsWith('<conversation>\n[User]: hello\n</conversation>\n\n')).toBe(true);
    expect(request.userText).not.toContain('<previous-summary>');
    let last = -1;
    for (const heading of sections) {
      const at = request.userText.indexOf(`${heading}\n`);
      expect(at, heading).toBeGreaterThan(last);
      last = at;
    }
  });

  it('includes a previous summary after the conversation', () => {
    const request = buildSummaryRequest({ messages: [user('hello')], previousSummary: 'Earlier: X' });
    const conversationEnd = request.userText.indexOf('</conversation>');
    const previous = request.userText.indexOf('<previous-summary>\nEarlier: X\n</previous-summary>');
    expect(previous).toBeGreaterThan(conversationEnd);
    expect(request.userText).toContain('## Critical Context');
  });

  it('asks for a turn-prefix summary for a split turn', () => {
    const request = buildSummaryRequest({ messages: [user('hello')], previousSummary: 'Earlier: X', splitTurn: true });
    expect(request.userText).toContain('<conversation>\n[User]: hello\n</conversation>');
    expect(request.userText).not.toContain('<previous-summary>');
    expect(request.userText).not.toContain('## Key Decisions');
    expect(request.userText).toMatch(/beginning of a single turn/);
  });

  it('sizes the summary budget', () => {
    expect(summaryMaxTokens(10000, false)).toBe(8000);
    expect(summaryMaxTokens(10001, true)).toBe(5000);
    expect(summaryMaxTokens(100000, false)).toBe(16000);
    expect(summaryMaxTokens(100000, true)).toBe(16000);
  });

  it('joins a split-turn summary with the fixed separator', () => {
    expect(SPLIT_TURN_SEPARATOR).toBe('\n\n---\n\n**Turn Context (split turn):**\n\n');
    expect(joinSplitSummary('H', 'P')).toBe('H\n\n---\n\n**Turn Context (split turn):**\n\nP');
  });

  it('takes a recorded summary apart into the answers it was made of', () => {
    const lists = { readFiles: ['a.ts'], modifiedFiles: ['b.ts'] };
    expect(summaryParts(appendFileLists(joinSplitSummary('H', 'P'), lists))).toEqual({ history: 'H', prefix: 'P' });
    expect(summaryParts(appendFileLists('H\n<read-files> in the text', { readFiles: ['a'], modifiedFiles: [] }))).toEqual({
      history: 'H\n<read-files> in the text',
    });
    expect(summaryParts('H')).toEqual({ history: 'H' });
  });

  it('tells a summarization request, and which one, from any other request', () => {
    const messages = [user('hello')];
    const history = buildSummaryRequest({ messages });
    const update = buildSummaryRequest({ messages, previousSummary: 'S' });
    const prefix = buildSummaryRequest({ messages, splitTurn: true });
    expect(summaryRequestPart(history.systemPrompt, history.userText)).toBe('history');
    expect(summaryRequestPart(update.systemPrompt, update.userText)).toBe('history');
    expect(summaryRequestPart(prefix.systemPrompt, prefix.userText)).toBe('prefix');
    expect(summaryRequestPart('You are an agent.', history.userText)).toBeUndefined();
    expect(summaryRequestPart(undefined, 'hello')).toBeUndefined();
  });
});

// ── File lists and rendering ──────────────────────────────────────────────────────────────────

describe('file lists', () => {
  const messages: Message[] = [
    assistant([fauxToolCall('read', { path: 'b.ts' }), fauxToolCall('read', { path: 'a.ts' }), fauxToolCall('read', { path: 'c.ts' })]),
    assistant([
      fauxToolCall('edit', { path: 'c.ts' }),
      fauxToolCall('write', { path: 'd.ts' }),
      fauxToolCall('bash', { path: 'ignored.ts' }),
      fauxToolCall('read', { file: 'no-path.ts' }),
    ]),
    user('read e.ts please'),
  ];

  it('collects read and modified paths from read/write/edit calls', () => {
    expect(fileListsFromToolCalls(messages)).toStrictEqual({
      readFiles: ['a.ts', 'b.ts'],
      modifiedFiles: ['c.ts', 'd.ts'],
    });
  });

  it('merges the lists of a previous compaction', () => {
    expect(fileListsFromToolCalls(messages, { readFiles: ['z.ts', 'd.ts'], modifiedFiles: ['y.ts'] })).toStrictEqual({
      readFiles: ['a.ts', 'b.ts', 'z.ts'],
      modifiedFiles: ['c.ts', 'd.ts', 'y.ts'],
    });
  });

  it('appends only non-empty lists', () => {
    expect(appendFileLists('S', { readFiles: [], modifiedFiles: [] })).toBe('S');
    expect(appendFileLists('S', { readFiles: ['a', 'b'], modifiedFiles: [] })).toBe('S\n\n<read-files>\na\nb\n</read-files>');
    expect(appendFileLists('S', { readFiles: ['a'], modifiedFiles: ['m'] })).toBe(
      'S\n\n<read-files>\na\n</read-files>\n\n<modified-files>\nm\n</modified-files>',
    );
  });
});

describe('renderCompactionSummary', () => {
  it('wraps and escapes the summary', () => {
    expect(renderCompactionSummary('a < b && c > d')).toBe(
      '<compaction type="context_summary">\na &lt; b &amp;&amp; c &gt; d\n</compaction>',
    );
  });

  it('escapes ampersands before angle brackets (no double escaping)', () => {
    expect(renderCompactionSummary('&lt;')).toBe('<compaction type="context_summary">\n&amp;lt;\n</compaction>');
  });
});
