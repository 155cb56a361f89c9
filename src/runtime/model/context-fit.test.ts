import { describe, expect, it } from 'vitest';
import { fauxAssistantMessage, fauxToolCall } from '@earendil-works/pi-ai';
import type { Message, ToolResultMessage, UserMessage } from '@earendil-works/pi-ai';
import { estimateTokens, renderCompactionSummary } from './compaction.ts';
import { contextFits, fitContext, fixedTokens, messageCap, reduceMessage, reduceText, requestBudget } from './context-fit.ts';
import { DOCUMENT_REF_PREFIX } from './documents.ts';

function user(text: string): UserMessage {
  return { role: 'user', content: text, timestamp: 0 };
}

function toolResult(text: string): ToolResultMessage {
  return { role: 'toolResult', toolCallId: 'call-1', toolName: 'read', content: [{ type: 'text', text }], isError: false, timestamp: 0 };
}

/** Text of exactly `tokens` estimated tokens, its head and tail told apart. */
function sized(tokens: number): string {
  const chars = tokens * 4;
  return `HEAD${'x'.repeat(chars - 8)}TAIL`;
}

function tokensOf(messages: readonly Message[]): number {
  return messages.reduce((sum, message) => sum + estimateTokens(message), 0);
}

function textOf(message: Message): string {
  if (message.role === 'user' && typeof message.content === 'string') return message.content;
  if (message.role === 'assistant') return message.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
  if (message.role === 'user' || message.role === 'toolResult')
    return (message.content as { type: string; text?: string }[]).flatMap((b) => (b.type === 'text' ? [b.text!] : [])).join('');
  return '';
}

describe('request budget', () => {
  it('is the window less the reserve and the fixed part, never below 1024', () => {
    expect(requestBudget({ contextWindow: 32768, reserveTokens: 10922, fixedTokens: 846 })).toBe(21000);
    expect(requestBudget({ contextWindow: 4000, reserveTokens: 1024, fixedTokens: 5000 })).toBe(1024);
  });

  it('counts the system prompt and the tool definitions at four characters a token', () => {
    expect(fixedTokens({ systemPrompt: 'abcdefgh' })).toBe(2);
    expect(fixedTokens({ systemPrompt: 'abcd', tools: [{ name: 'x' }] })).toBe(Math.ceil((4 + '[{"name":"x"}]'.length) / 4));
    expect(fixedTokens({})).toBe(0);
  });

  it("counts the tools as their array's JSON, measuring each tool object once however many turns offer it", () => {
    const lookup = {
      name: 'lookup',
      description: 'Looks a key up.',
      parameters: { type: 'object', properties: { key: { type: 'string' } } },
    };
    const other = { name: 'other', description: 'ünïcode', parameters: {} };
    for (const tools of [[], [lookup], [lookup, other], [other, lookup, other], [lookup, 'text', 7, null, undefined]]) {
      for (let turn = 0; turn < 2; turn++)
        expect(fixedTokens({ systemPrompt: 'p', tools })).toBe(Math.ceil((1 + JSON.stringify(tools).length) / 4));
    }
  });
});

describe('reduceText and reduceMessage', () => {
  it('keeps the head and tail and says how much was cut and how to get the rest', () => {
    const text = sized(10000);
    const reduced = reduceText(text, 2000, 'toolResult');
    expect(reduced.length).toBeLessThanOrEqual(2000);
    expect(reduced.startsWith('HEAD')).toBe(true);
    expect(reduced.endsWith('TAIL')).toBe(true);
    expect(reduced).toContain(
      `[… ${40000 - 1600} characters (about ${Math.ceil((40000 - 1600) / 4)} tokens) cut from the middle of this tool result`,
    );
    expect(reduced).toContain('call the tool again with a narrower request');
    expect(reduceText(text, 2000, 'user')).toContain('The conversation log keeps the full message');
    expect(reduceText('short', 2000, 'user')).toBe('short');
  });

  it('never splits a character made of two UTF-16 units', () => {
    for (const max of [1000, 1001, 1002, 1003]) {
      const reduced = reduceText('😀'.repeat(5000), max, 'user');
      // A lone surrogate would not survive a UTF-8 round trip.
      expect(new TextDecoder().decode(new TextEncoder().encode(reduced))).toBe(reduced);
      expect(reduced.length).toBeLessThanOrEqual(max);
    }
  });

  it('leaves a message that fits as it is (the same object)', () => {
    const message = user(sized(100));
    expect(reduceMessage(message, 100)).toBe(message);
  });

  it('brings an oversized user message, tool result or answer under its cap, leaving images and document references', () => {
    const cap = 1000;
    const plain = reduceMessage(user(sized(50000)), cap);
    expect(estimateTokens(plain)).toBeLessThanOrEqual(cap);
    const result = reduceMessage(toolResult(sized(50000)), cap);
    expect(estimateTokens(result)).toBeLessThanOrEqual(cap);
    expect(textOf(result)).toContain('cut from the middle of this tool result');
    const answer = reduceMessage(fauxAssistantMessage(sized(50000)), cap);
    expect(estimateTokens(answer)).toBeLessThanOrEqual(cap);

    const document = `${DOCUMENT_REF_PREFIX}doc_1`;
    const blocks: UserMessage = {
      role: 'user',
      content: [
        { type: 'text', text: sized(50000) },
        { type: 'image', data: 'IMG', mimeType: 'image/png' },
        { type: 'text', text: document },
      ],
      timestamp: 0,
    };
    const reduced = reduceMessage(blocks, cap) as UserMessage;
    const content = reduced.content as { type: string; text?: string; data?: string }[];
    expect(content[1]).toEqual({ type: 'image', data: 'IMG', mimeType: 'image/png' });
    expect(content[2]!.text).toBe(document);
    expect(content[0]!.text!.length).toBeLessThan(cap * 4);
  });

  it('cuts only text, into the room its images leave, and never text too short to gain from a cut', () => {
    const image = { type: 'image' as const, data: 'AAAA', mimeType: 'image/png' };
    // An image alone is over the cap: a short caption beside it is sent as it is.
    const captioned: UserMessage = { role: 'user', content: [{ type: 'text', text: 'one /bump' }, image], timestamp: 0 };
    expect(reduceMessage(captioned, 512)).toBe(captioned);
    // A long text beside the image takes what the cap leaves after the image (1,200 tokens).
    const long: UserMessage = { role: 'user', content: [{ type: 'text', text: sized(4000) }, image], timestamp: 0 };
    const reduced = reduceMessage(long, 2000);
    expect(estimateTokens(reduced)).toBeLessThanOrEqual(2000);
    expect(textOf(reduced)).toMatch(/^HEAD[\s\S]*cut from the middle of this message[\s\S]*TAIL$/);
    expect((reduced.content as unknown[]).at(-1)).toEqual(image);
  });

  it('is deterministic: the same message reduces to the same text', () => {
    const message = toolResult(sized(20000));
    expect(reduceMessage(message, 700)).toStrictEqual(reduceMessage(message, 700));
  });
});

describe('contextFits (whether to compact before a turn)', () => {
  it('counts each message at most its cap: one oversized message alone is reduced, not compacted', () => {
    expect(contextFits([user(sized(100)), toolResult(sized(1_000_000))], 4000)).toBe(true);
    expect(contextFits([user(sized(1_000_000)), fauxAssistantMessage(sized(100)), user(sized(1_000_000))], 4000)).toBe(false);
  });

  it('is false once many small messages add up past the budget', () => {
    const messages = Array.from({ length: 100 }, () => user(sized(50)));
    expect(contextFits(messages, 5000)).toBe(true);
    expect(contextFits(messages, 4999)).toBe(false);
  });
});

describe('fitContext', () => {
  it('sends a context that fits unchanged', () => {
    const messages = [user(sized(100)), fauxAssistantMessage(sized(100))];
    const fitted = fitContext(messages, 1000);
    expect(fitted).toStrictEqual({ messages, reduced: 0, omitted: 0 });
    expect(fitted.messages[0]).toBe(messages[0]);
  });

  it('reduces a single message over half the budget and keeps the rest whole', () => {
    const messages = [user(sized(100)), fauxAssistantMessage([fauxToolCall('read', { path: 'a' })]), toolResult(sized(1_000_000))];
    const fitted = fitContext(messages, 4000);
    expect(fitted.omitted).toBe(0);
    expect(fitted.reduced).toBe(1);
    expect(fitted.messages.slice(0, 2)).toStrictEqual(messages.slice(0, 2));
    expect(tokensOf(fitted.messages)).toBeLessThanOrEqual(4000);
    expect(estimateTokens(fitted.messages[2]!)).toBeLessThanOrEqual(messageCap(4000));
  });

  it('leaves out the oldest of many small messages, keeps the summary first and never starts at a tool result', () => {
    const summary = user(renderCompactionSummary('what happened before'));
    const messages: Message[] = [summary];
    for (let i = 0; i < 500; i++) {
      messages.push(user(`question ${i} ${sized(50)}`));
      messages.push(fauxAssistantMessage([fauxToolCall('read', { path: String(i) })]));
      messages.push(toolResult(sized(50)));
    }
    const fitted = fitContext(messages, 3000);
    expect(tokensOf(fitted.messages)).toBeLessThanOrEqual(3000);
    expect(fitted.messages[0]).toBe(summary);
    expect(textOf(fitted.messages[1]!)).toContain(`${fitted.omitted} earlier messages are left out of this request`);
    expect(fitted.messages[2]!.role).not.toBe('toolResult');
    expect(fitted.omitted).toBeGreaterThan(1400);
    // What is kept is the newest, whole.
    expect(fitted.messages.at(-1)).toBe(messages.at(-1));
    expect(fitted.messages.length - 2).toBe(messages.length - 1 - fitted.omitted);
  });

  it('fits a last turn that is itself too large: one step with many big results', () => {
    const messages: Message[] = [user(sized(100)), fauxAssistantMessage(sized(100))];
    messages.push(user('read everything'));
    const calls = Array.from({ length: 8 }, (_, i) => fauxToolCall('read', { path: String(i) }));
    messages.push(fauxAssistantMessage(calls));
    for (let i = 0; i < 8; i++) messages.push(toolResult(sized(100_000)));
    const fitted = fitContext(messages, 8000);
    expect(tokensOf(fitted.messages)).toBeLessThanOrEqual(8000);
    // The results stay paired with their step.
    const step = fitted.messages.findIndex((message) => message.role === 'assistant' && message.content.some((b) => b.type === 'toolCall'));
    expect(step).toBeGreaterThanOrEqual(0);
    expect(fitted.messages.slice(step + 1).every((message) => message.role === 'toolResult')).toBe(true);
    expect(fitted.messages.slice(step + 1)).toHaveLength(8);
    for (const result of fitted.messages.slice(step + 1)) expect(textOf(result)).toContain('cut from the middle of this tool result');
  });

  it('is a function of its inputs', () => {
    const messages = [user(sized(30000)), fauxAssistantMessage(sized(30000)), user(sized(30000))];
    expect(fitContext(messages, 5000)).toStrictEqual(fitContext(messages, 5000));
  });
});
