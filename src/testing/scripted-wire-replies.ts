/**
 * Replies in either wire format: a `ScriptedResponse` planned once (defaults applied, text and
 * arguments cut into chunks) and rendered as OpenAI or Anthropic SSE frames or whole JSON bodies.
 */
import type { RecordedRequest, ScriptedFinishReason, ScriptedResponse, ScriptedWireApi } from './scripted-model-types.ts';
import { parseMaybeJson } from './scripted-wire-requests.ts';

const TEXT_CHUNKS = 3;
const ARGUMENT_FRAGMENTS = 3;
const CHARS_PER_TOKEN = 4;

/** A ScriptedResponse with every default applied, ready to render in either format. */
export interface PlannedReply {
  reasoning: string[];
  text: string[];
  toolCalls: { id: string; name: string; fragments: string[] }[];
  finishReason: ScriptedFinishReason;
  usage: { input: number; output: number; cacheRead: number };
}

export function planReply(response: ScriptedResponse, request: RecordedRequest, nextId: () => string): PlannedReply {
  const reasoning = toChunks(response.reasoning);
  const text = toChunks(response.text);
  const toolCalls = (response.toolCalls ?? []).map((call) => ({
    id: call.id ?? nextId(),
    name: call.name,
    fragments: Array.isArray(call.arguments) ? call.arguments : splitEvenly(JSON.stringify(call.arguments), ARGUMENT_FRAGMENTS),
  }));
  const outputChars =
    [...reasoning, ...text].join('').length + toolCalls.reduce((sum, call) => sum + call.name.length + call.fragments.join('').length, 0);
  // Serialized messages rather than their text, so tool calls and results also grow the count.
  const inputChars = (request.system?.length ?? 0) + JSON.stringify(request.messages).length + JSON.stringify(request.tools).length;
  return {
    reasoning,
    text,
    toolCalls,
    finishReason: response.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
    usage: {
      input: response.usage?.input ?? Math.max(1, Math.ceil(inputChars / CHARS_PER_TOKEN)),
      output: response.usage?.output ?? Math.max(1, Math.ceil(outputChars / CHARS_PER_TOKEN)),
      cacheRead: response.usage?.cacheRead ?? 0,
    },
  };
}

function toChunks(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  if (Array.isArray(value)) return value.filter((chunk) => chunk.length > 0);
  if (value.length === 0) return [];
  // Split after whitespace so chunks look like tokens and rejoin to the exact input.
  const words = value.split(/(?<=\s)(?=\S)/);
  const size = Math.ceil(words.length / TEXT_CHUNKS);
  const chunks: string[] = [];
  for (let i = 0; i < words.length; i += size) chunks.push(words.slice(i, i + size).join(''));
  return chunks;
}

function splitEvenly(value: string, parts: number): string[] {
  const chars = Array.from(value);
  const size = Math.max(1, Math.ceil(chars.length / parts));
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Rendering

const OPENAI_FINISH: Record<ScriptedFinishReason, string> = {
  stop: 'stop',
  tool_calls: 'tool_calls',
  length: 'length',
};

const ANTHROPIC_STOP: Record<ScriptedFinishReason, string> = {
  stop: 'end_turn',
  tool_calls: 'tool_use',
  length: 'max_tokens',
};

// Anthropic replays thinking only with a signature, so hand out a stable fake one.
const THINKING_SIGNATURE = 'scripted-thinking-signature';

function openaiUsage(plan: PlannedReply): Record<string, unknown> {
  // pi-ai reads input as prompt_tokens minus the cached part, so fold cache reads back in.
  const prompt = plan.usage.input + plan.usage.cacheRead;
  return {
    prompt_tokens: prompt,
    completion_tokens: plan.usage.output,
    total_tokens: prompt + plan.usage.output,
    ...(plan.usage.cacheRead > 0 ? { prompt_tokens_details: { cached_tokens: plan.usage.cacheRead } } : {}),
  };
}

export function openaiFrames(plan: PlannedReply, model: string, n: number, includeUsage: boolean): string[] {
  const base = {
    id: `chatcmpl-scripted-${n}`,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model,
    system_fingerprint: null,
  };
  // With include_usage the real API sends `usage: null` on every chunk but the last.
  const usageNull = includeUsage ? { usage: null } : {};
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null): string =>
    sse(undefined, {
      ...base,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      ...usageNull,
    });
  const frames = [chunk({ role: 'assistant', content: '', refusal: null })];
  for (const piece of plan.reasoning) frames.push(chunk({ reasoning_content: piece }));
  for (const piece of plan.text) frames.push(chunk({ content: piece }));
  plan.toolCalls.forEach((call, index) => {
    frames.push(
      chunk({
        tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
      }),
    );
    for (const fragment of call.fragments) {
      frames.push(chunk({ tool_calls: [{ index, function: { arguments: fragment } }] }));
    }
  });
  frames.push(chunk({}, OPENAI_FINISH[plan.finishReason]));
  if (includeUsage) frames.push(sse(undefined, { ...base, choices: [], usage: openaiUsage(plan) }));
  frames.push('data: [DONE]\n\n');
  return frames;
}

export function anthropicFrames(plan: PlannedReply, model: string, n: number): string[] {
  const frames = [
    sse('message_start', {
      type: 'message_start',
      message: {
        id: `msg_scripted_${n}`,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: plan.usage.input,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: plan.usage.cacheRead,
          output_tokens: 1,
        },
      },
    }),
  ];
  let index = 0;
  const block = (start: Record<string, unknown>, deltas: Record<string, unknown>[]): void => {
    frames.push(sse('content_block_start', { type: 'content_block_start', index, content_block: start }));
    for (const delta of deltas) {
      frames.push(sse('content_block_delta', { type: 'content_block_delta', index, delta }));
    }
    frames.push(sse('content_block_stop', { type: 'content_block_stop', index }));
    index += 1;
  };
  if (plan.reasoning.length > 0) {
    block({ type: 'thinking', thinking: '', signature: '' }, [
      ...plan.reasoning.map((thinking) => ({ type: 'thinking_delta', thinking })),
      { type: 'signature_delta', signature: THINKING_SIGNATURE },
    ]);
  }
  if (plan.text.length > 0) {
    block(
      { type: 'text', text: '' },
      plan.text.map((text) => ({ type: 'text_delta', text })),
    );
  }
  for (const call of plan.toolCalls) {
    block(
      { type: 'tool_use', id: call.id, name: call.name, input: {} },
      call.fragments.map((partial_json) => ({ type: 'input_json_delta', partial_json })),
    );
  }
  frames.push(
    sse('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: ANTHROPIC_STOP[plan.finishReason], stop_sequence: null },
      usage: {
        input_tokens: plan.usage.input,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: plan.usage.cacheRead,
        output_tokens: plan.usage.output,
      },
    }),
  );
  frames.push(sse('message_stop', { type: 'message_stop' }));
  return frames;
}

export function renderWhole(api: ScriptedWireApi, plan: PlannedReply, model: string, n: number): unknown {
  const reasoning = plan.reasoning.join('');
  const text = plan.text.join('');
  if (api === 'openai-completions') {
    return {
      id: `chatcmpl-scripted-${n}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: text.length > 0 ? text : null,
            refusal: null,
            ...(reasoning.length > 0 ? { reasoning_content: reasoning } : {}),
            ...(plan.toolCalls.length > 0
              ? {
                  tool_calls: plan.toolCalls.map((call) => ({
                    id: call.id,
                    type: 'function',
                    function: { name: call.name, arguments: call.fragments.join('') },
                  })),
                }
              : {}),
          },
          logprobs: null,
          finish_reason: OPENAI_FINISH[plan.finishReason],
        },
      ],
      usage: openaiUsage(plan),
    };
  }
  const content: Record<string, unknown>[] = [];
  if (reasoning.length > 0) content.push({ type: 'thinking', thinking: reasoning, signature: THINKING_SIGNATURE });
  if (text.length > 0) content.push({ type: 'text', text });
  for (const call of plan.toolCalls) {
    content.push({ type: 'tool_use', id: call.id, name: call.name, input: parseMaybeJson(call.fragments.join('')) });
  }
  return {
    id: `msg_scripted_${n}`,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: ANTHROPIC_STOP[plan.finishReason],
    stop_sequence: null,
    usage: {
      input_tokens: plan.usage.input,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: plan.usage.cacheRead,
      output_tokens: plan.usage.output,
    },
  };
}

export function errorBody(api: ScriptedWireApi, status: number, message: string): unknown {
  if (api === 'anthropic-messages') {
    const type = status === 429 ? 'rate_limit_error' : status >= 500 ? 'api_error' : 'invalid_request_error';
    return { type: 'error', error: { type, message } };
  }
  const type = status === 429 ? 'rate_limit_exceeded' : status >= 500 ? 'server_error' : 'invalid_request_error';
  return { error: { message, type, param: null, code: null } };
}

function sse(event: string | undefined, data: unknown): string {
  return `${event === undefined ? '' : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`;
}
