import { describe, expect, it } from 'vitest';
import { WorkersAIResponse, sseData } from './workers-ai-response.ts';

const encoder = new TextEncoder();

/** A guarded read over `chunks`, as the provider hands sseData one. */
function reader(chunks: Uint8Array[]): () => Promise<ReadableStreamReadResult<Uint8Array>> {
  let next = 0;
  return async () => (next < chunks.length ? { done: false, value: chunks[next++]! } : { done: true, value: undefined });
}

/** `bytes` cut into pieces of `size` bytes: lines, JSON and multi-byte characters split anywhere. */
function every(bytes: Uint8Array, size: number): Uint8Array[] {
  const pieces: Uint8Array[] = [];
  for (let at = 0; at < bytes.byteLength; at += size) pieces.push(bytes.subarray(at, at + size));
  return pieces;
}

/** What one streamed response folds into: what the provider reads off a WorkersAIResponse. */
async function fold(chunks: Uint8Array[]) {
  const response = new WorkersAIResponse();
  let text = '';
  for await (const event of sseData(reader(chunks))) text += response.add(event);
  return { text, toolCalls: response.toolCalls(), usage: response.usage, finishReason: response.finishReason };
}

// Accents, a ligature, CJK and emoji (4-byte, one with a joiner) in text and in tool arguments,
// so that a split lands inside a character as well as inside a line and inside the JSON.
const TEXT = ['Voilà, ', 'the café in Zürich — ', '東京 ', 'ﬁne 😀', ' 👩‍💻!'];

const streams = {
  'OpenAI-compatible, CRLF lines': {
    separator: '\r\n\r\n',
    calls: [
      { id: 'call_1', name: 'forecast', args: { city: 'Bogotá 🌧', note: 'naïve €' } },
      { id: 'call_2', name: 'translate', args: { to: '日本語' } },
    ],
    events: [
      ...TEXT.map((content) => ({ choices: [{ delta: { content } }] })),
      {
        choices: [
          {
            delta: {
              tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'forecast', arguments: '{"city":"Bogo' } }],
            },
          },
        ],
      },
      { choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: 'tá 🌧","note":"naïve €"}' } }] } }] },
      {
        choices: [
          {
            delta: {
              tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'translate', arguments: '{"to":"日本語"}' } }],
            },
          },
        ],
      },
      { choices: [{ delta: {}, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 17, completion_tokens: 42, total_tokens: 59 } },
    ],
  },
  'native, LF lines': {
    separator: '\n\n',
    calls: [{ id: 'call_1', name: 'forecast', args: { city: 'Bogotá 🌧', note: 'naïve €' } }],
    events: [
      ...TEXT.map((response) => ({ response })),
      { response: '', tool_calls: [{ id: 'call_1', name: 'forecast', arguments: { city: 'Bogotá 🌧', note: 'naïve €' } }] },
      { response: '', usage: { prompt_tokens: 17, completion_tokens: 42, total_tokens: 59 } },
    ],
  },
};

describe.each(Object.entries(streams))('a %s stream split at any byte', (_, { separator, calls, events }) => {
  const body = encoder.encode(events.map((event) => `data: ${JSON.stringify(event)}${separator}`).join('') + `data: [DONE]${separator}`);

  it('folds into the same text, tool calls and usage as the whole body', async () => {
    const whole = await fold([body]);
    expect(whole.text).toBe(TEXT.join(''));
    expect(whole.toolCalls.map(({ id, name, arguments: args }) => ({ id, name, args }))).toEqual(calls);
    expect(whole.usage).toEqual({ prompt_tokens: 17, completion_tokens: 42, total_tokens: 59 });
    // Every piece size up to a few events' worth, and every single cut into two pieces.
    for (let size = 1; size <= 64; size++) expect(await fold(every(body, size)), `pieces of ${size} bytes`).toEqual(whole);
    for (let at = 1; at < body.byteLength; at++) {
      expect(await fold([body.subarray(0, at), body.subarray(at)]), `cut at byte ${at}`).toEqual(whole);
    }
  });
});
