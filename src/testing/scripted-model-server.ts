/**
 * A loopback HTTP server that impersonates OpenAI chat-completions and Anthropic messages, so
 * tests drive pi-ai's real providers over the real streaming wire formats instead of a fake
 * provider. Replies come from a FIFO script: one step per model request, in arrival order.
 *
 * Node only (node:http) and free of vitest imports: crash tests import it from plain child
 * processes through `@flue/runtime/testing`.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type ScriptedWireApi = 'openai-completions' | 'anthropic-messages';

export type ScriptedFinishReason = 'stop' | 'tool_calls' | 'length';

export interface ScriptedToolCall {
  /** Default `call_<n>`, numbered across the server's lifetime (reset by `reset()`). */
  id?: string;
  name: string;
  /** An object is serialized and streamed in a few fragments; a string[] is sent verbatim as the
   * fragments, which lets a test send arguments that are not valid JSON. */
  arguments: Record<string, unknown> | string[];
}

export interface ScriptedUsage {
  input?: number;
  output?: number;
  cacheRead?: number;
}

export interface ScriptedResponse {
  /** A string is streamed in a few word-aligned chunks; a string[] gives the exact chunks. */
  text?: string | string[];
  /** Thinking deltas: OpenAI `delta.reasoning_content`, Anthropic `thinking_delta`. */
  reasoning?: string | string[];
  toolCalls?: ScriptedToolCall[];
  /** Default `tool_calls` when `toolCalls` is non-empty, else `stop`. */
  finishReason?: ScriptedFinishReason;
  /** Missing fields are estimated at about 4 characters per token (input from the request). */
  usage?: ScriptedUsage;
  /** Answer with this HTTP status and a JSON error instead of a stream (e.g. 500, 429). */
  status?: number;
  /** The error body for `status`. A string becomes the message of a provider-shaped error; any
   * other value is sent as JSON verbatim. */
  errorBody?: unknown;
  /** Extra response headers, e.g. `retry-after` on a 429. */
  headers?: Record<string, string>;
  /** Pause between SSE chunks. */
  chunkDelayMs?: number;
  /** Send this many SSE chunks, then keep the connection open until the client goes away or
   * the server closes. A chunk is one SSE event, counting the opening one (the OpenAI role
   * chunk, Anthropic `message_start`). For a non-stream request any value hangs before replying. */
  hangAfterChunks?: number;
  /** Send this many SSE chunks, then destroy the socket. */
  dropAfterChunks?: number;
}

export type ScriptStep =
  | ScriptedResponse
  | ((request: RecordedRequest) => ScriptedResponse | Promise<ScriptedResponse>);

export interface RecordedToolCall {
  id: string;
  name: string;
  /** Parsed JSON when the arguments parse, otherwise the raw string. */
  arguments: unknown;
}

export interface RecordedMessage {
  role: 'user' | 'assistant' | 'tool' | 'system';
  /** Text flattened across content parts; images appear as `[image]`. */
  content: string;
  /** Assistant thinking replayed to the model, when the request carries it. */
  reasoning?: string;
  /** Tool turns: the call this result answers. */
  toolCallId?: string;
  /** Tool turns, Anthropic only (OpenAI tool messages carry no error flag). */
  isError?: boolean;
  /** Assistant turns. */
  toolCalls?: RecordedToolCall[];
}

export interface RecordedTool {
  name: string;
  description: string;
  /** JSON Schema as sent: OpenAI `function.parameters`, Anthropic `input_schema`. */
  parameters: unknown;
}

export interface RecordedRequest {
  api: ScriptedWireApi;
  /** `Date.now()` when the request arrived (before its body was read). */
  receivedAt: number;
  /** Request path including any query string, e.g. `/v1/messages?beta=true`. */
  path: string;
  /** The parsed JSON body as sent; `any` because tests poke at raw provider payloads. */
  body: any;
  /** The leading system prompt, normalized across both formats; undefined when none was sent. */
  system: string | undefined;
  tools: RecordedTool[];
  /** The conversation without the leading system prompt, normalized across both formats. */
  messages: RecordedMessage[];
  /** Lower-cased header names. */
  headers: Record<string, string>;
}

export interface ScriptedModelServer {
  /** e.g. `http://127.0.0.1:PORT`. The OpenAI base URL is `url + '/v1'`. */
  readonly url: string;
  /** Append steps to the queue. */
  script(...steps: ScriptStep[]): void;
  /** Clear the queue, the recorded requests and the id counters. */
  reset(): void;
  /** Every model request received, in arrival order. */
  readonly requests: readonly RecordedRequest[];
  /** Resolve once at least `count` requests were recorded (default timeout 5000 ms). */
  waitForRequests(count: number, timeoutMs?: number): Promise<RecordedRequest[]>;
  /** Steps not yet consumed. */
  pending(): number;
  /** Stop listening and destroy every connection, hung streams included. */
  close(): Promise<void>;
}

export interface ScriptedModelServerOptions {
  /** Default 0: a random free port. */
  port?: number;
  /** Answers requests when no step is queued (e.g. an echo for a demo) instead of an HTTP 500. */
  fallback?: ScriptStep;
}

/**
 * Lanes let code that cannot reach this process's memory (a Worker in workerd) script the server
 * over HTTP: a request whose `model` has a lane takes its steps from that lane's queue.
 *   POST   /__scripted/lanes/<model>            body { steps: ScriptedResponse[] }  (append)
 *   GET    /__scripted/lanes/<model>/requests   recorded requests of the lane
 *   DELETE /__scripted/lanes/<model>            drop the lane's queue and recordings
 */
export const LANE_ROUTE = '/__scripted/lanes/';

export const NO_STEP_QUEUED_MESSAGE = 'scripted model: no step queued';

const DEFAULT_WAIT_TIMEOUT_MS = 5000;
const TEXT_CHUNKS = 3;
const ARGUMENT_FRAGMENTS = 3;
const CHARS_PER_TOKEN = 4;

interface Waiter {
  count: number;
  resolve: (requests: RecordedRequest[]) => void;
}

/** A ScriptedResponse with every default applied, ready to render in either format. */
interface PlannedReply {
  reasoning: string[];
  text: string[];
  toolCalls: { id: string; name: string; fragments: string[] }[];
  finishReason: ScriptedFinishReason;
  usage: { input: number; output: number; cacheRead: number };
}

export async function startScriptedModelServer(
  options: ScriptedModelServerOptions = {},
): Promise<ScriptedModelServer> {
  const queue: ScriptStep[] = [];
  const requests: RecordedRequest[] = [];
  const lanes = new Map<string, { queue: ScriptStep[]; requests: RecordedRequest[] }>();
  let waiters: Waiter[] = [];
  let toolCallCounter = 0;
  let responseCounter = 0;
  const sockets = new Set<Socket>();
  // Cancels pending chunk delays so close() does not leave timers holding the process open.
  const lifetime = new AbortController();

  const record = (request: RecordedRequest): void => {
    requests.push(request);
    const ready = waiters.filter((waiter) => requests.length >= waiter.count);
    waiters = waiters.filter((waiter) => requests.length < waiter.count);
    for (const waiter of ready) waiter.resolve(requests.slice());
  };

  const laneRoute = async (req: IncomingMessage, res: ServerResponse, path: string): Promise<void> => {
    const [name = '', tail] = decodeURIComponent(path.slice(LANE_ROUTE.length).split('?')[0]!).split('/requests');
    let lane = lanes.get(name);
    if (req.method === 'DELETE') {
      lanes.delete(name);
      sendJson(res, 200, { ok: true });
    } else if (req.method === 'GET' && tail !== undefined) {
      sendJson(res, 200, lane?.requests ?? []);
    } else if (req.method === 'POST') {
      const { steps } = JSON.parse(await readBody(req)) as { steps: ScriptedResponse[] };
      if (lane === undefined) lanes.set(name, (lane = { queue: [], requests: [] }));
      lane.queue.push(...steps);
      sendJson(res, 200, { ok: true, pending: lane.queue.length });
    } else {
      sendJson(res, 404, { error: { message: `scripted model: no lane route for ${req.method} ${path}` } });
    }
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = req.url ?? '/';
    if (path.startsWith(LANE_ROUTE)) return laneRoute(req, res, path);
    const receivedAt = Date.now();
    const api = routeOf(req.method, path);
    if (api === undefined) {
      sendJson(res, 404, { error: { message: `scripted model: no route for ${req.method} ${path}` } });
      return;
    }
    // Without lanes the step is taken before the body is read, so concurrent requests get steps
    // in arrival order (a body that fails to parse therefore still uses up its step).
    let step = lanes.size === 0 ? queue.shift() : undefined;
    let body: unknown;
    try {
      body = JSON.parse(await readBody(req));
    } catch (error) {
      sendJson(res, 400, errorBody(api, 400, `scripted model: request body is not JSON: ${describe(error)}`));
      return;
    }
    const recorded = normalizeRequest(api, path, body, req, receivedAt);
    record(recorded);
    if (lanes.size > 0) {
      const lane = lanes.get(String((body as { model?: unknown } | null)?.model));
      lane?.requests.push(recorded);
      step = lane === undefined ? queue.shift() : lane.queue.shift();
    }
    step ??= options.fallback;
    if (step === undefined) {
      sendJson(res, 500, errorBody(api, 500, `${NO_STEP_QUEUED_MESSAGE} (request #${requests.length} to ${path})`));
      return;
    }
    let response: ScriptedResponse;
    try {
      response = typeof step === 'function' ? await step(recorded) : step;
    } catch (error) {
      sendJson(res, 500, errorBody(api, 500, `scripted model: step threw: ${describe(error)}`));
      return;
    }
    if (response.status !== undefined && response.status >= 400) {
      const payload =
        typeof response.errorBody === 'string' || response.errorBody === undefined
          ? errorBody(api, response.status, response.errorBody ?? `scripted error ${response.status}`)
          : response.errorBody;
      sendJson(res, response.status, payload, response.headers);
      return;
    }
    responseCounter += 1;
    const plan = planReply(response, recorded, () => `call_${++toolCallCounter}`);
    const model = typeof recorded.body?.model === 'string' ? recorded.body.model : 'model';
    if (recorded.body?.stream !== true) {
      sendWhole(res, response, renderWhole(api, plan, model, responseCounter));
      return;
    }
    const frames =
      api === 'openai-completions'
        ? openaiFrames(plan, model, responseCounter, recorded.body?.stream_options?.include_usage === true)
        : anthropicFrames(plan, model, responseCounter);
    await sendFrames(res, frames, response, lifetime.signal);
  };

  // Imported on use, so this entry also loads where no HTTP server exists (workerd imports the provider).
  const { createServer } = await import('node:http');
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: `scripted model: ${describe(error)}` } });
      else res.destroy();
    });
  });
  // Clients in this process stop reusing an idle socket first (undici: after 4 s). With the
  // server's 5 s default, a request sent just as a busy event loop catches up can race the close.
  server.keepAliveTimeout = 60_000;
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    script(...steps) {
      queue.push(...steps);
    },
    reset() {
      queue.length = 0;
      requests.length = 0;
      toolCallCounter = 0;
      responseCounter = 0;
    },
    get requests() {
      return requests;
    },
    waitForRequests(count, timeoutMs = DEFAULT_WAIT_TIMEOUT_MS) {
      if (requests.length >= count) return Promise.resolve(requests.slice());
      return new Promise((resolve, reject) => {
        const waiter: Waiter = {
          count,
          resolve: (got) => {
            clearTimeout(timer);
            resolve(got);
          },
        };
        const timer = setTimeout(() => {
          waiters = waiters.filter((other) => other !== waiter);
          reject(
            new Error(`scripted model: waited ${timeoutMs} ms for ${count} request(s), got ${requests.length}`),
          );
        }, timeoutMs);
        waiters.push(waiter);
      });
    },
    pending() {
      return queue.length;
    },
    close() {
      lifetime.abort();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}

function routeOf(method: string | undefined, path: string): ScriptedWireApi | undefined {
  if (method !== 'POST') return undefined;
  // pi-ai's Anthropic client posts to `/v1/messages?beta=true`: match the path alone.
  const pathname = path.split('?')[0]?.replace(/\/+$/, '');
  if (pathname === '/v1/chat/completions') return 'openai-completions';
  if (pathname === '/v1/messages') return 'anthropic-messages';
  return undefined;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// ---------------------------------------------------------------------------------------------
// Request normalization

function normalizeRequest(
  api: ScriptedWireApi,
  path: string,
  body: unknown,
  req: IncomingMessage,
  receivedAt: number,
): RecordedRequest {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  const raw = isRecord(body) ? body : {};
  const normalized = api === 'openai-completions' ? normalizeOpenAI(raw) : normalizeAnthropic(raw);
  return { api, path, receivedAt, body, headers, ...normalized };
}

type Normalized = Pick<RecordedRequest, 'system' | 'tools' | 'messages'>;

function normalizeOpenAI(body: Record<string, unknown>): Normalized {
  const systemParts: string[] = [];
  const messages: RecordedMessage[] = [];
  for (const message of asArray(body.messages)) {
    if (!isRecord(message)) continue;
    const role = message.role;
    if (role === 'system' || role === 'developer') {
      // Only the leading instructions are "the system prompt"; later ones stay in place.
      if (messages.length === 0) systemParts.push(flattenOpenAIContent(message.content));
      else messages.push({ role: 'system', content: flattenOpenAIContent(message.content) });
    } else if (role === 'user') {
      messages.push({ role: 'user', content: flattenOpenAIContent(message.content) });
    } else if (role === 'assistant') {
      const out: RecordedMessage = { role: 'assistant', content: flattenOpenAIContent(message.content) };
      for (const field of ['reasoning_content', 'reasoning', 'reasoning_text']) {
        const value = message[field];
        if (typeof value === 'string' && value.length > 0) {
          out.reasoning = value;
          break;
        }
      }
      const toolCalls = asArray(message.tool_calls).filter(isRecord);
      if (toolCalls.length > 0) {
        out.toolCalls = toolCalls.map((call) => {
          const fn = isRecord(call.function) ? call.function : {};
          return {
            id: String(call.id ?? ''),
            name: String(fn.name ?? ''),
            arguments: parseMaybeJson(fn.arguments),
          };
        });
      }
      messages.push(out);
    } else if (role === 'tool') {
      messages.push({
        role: 'tool',
        content: flattenOpenAIContent(message.content),
        toolCallId: String(message.tool_call_id ?? ''),
      });
    }
  }
  const tools: RecordedTool[] = [];
  for (const tool of asArray(body.tools)) {
    if (!isRecord(tool) || !isRecord(tool.function)) continue;
    tools.push({
      name: String(tool.function.name ?? ''),
      description: String(tool.function.description ?? ''),
      parameters: tool.function.parameters,
    });
  }
  return { system: systemParts.length > 0 ? systemParts.join('\n\n') : undefined, tools, messages };
}

function flattenOpenAIContent(content: unknown): string {
  if (typeof content === 'string') return content;
  return asArray(content)
    .map((part) => {
      if (!isRecord(part)) return '';
      if (part.type === 'text') return String(part.text ?? '');
      if (part.type === 'image_url') return '[image]';
      return '';
    })
    .filter((text) => text.length > 0)
    .join('\n');
}

function normalizeAnthropic(body: Record<string, unknown>): Normalized {
  const system =
    typeof body.system === 'string'
      ? body.system
      : Array.isArray(body.system)
        ? flattenAnthropicText(body.system, '\n\n')
        : undefined;
  const messages: RecordedMessage[] = [];
  for (const message of asArray(body.messages)) {
    if (!isRecord(message)) continue;
    if (message.role === 'assistant') {
      messages.push(normalizeAnthropicAssistant(message.content));
    } else if (message.role === 'user') {
      messages.push(...normalizeAnthropicUser(message.content));
    } else if (message.role === 'system') {
      // Mid-conversation system messages (only sent when compat allows them).
      messages.push({ role: 'system', content: flattenAnthropicText(message.content, '\n') });
    }
  }
  const tools: RecordedTool[] = [];
  for (const tool of asArray(body.tools)) {
    if (!isRecord(tool) || typeof tool.name !== 'string') continue;
    tools.push({ name: tool.name, description: String(tool.description ?? ''), parameters: tool.input_schema });
  }
  return { system: system === '' ? undefined : system, tools, messages };
}

function normalizeAnthropicAssistant(content: unknown): RecordedMessage {
  if (typeof content === 'string') return { role: 'assistant', content };
  const text: string[] = [];
  const reasoning: string[] = [];
  const toolCalls: RecordedToolCall[] = [];
  for (const block of asArray(content)) {
    if (!isRecord(block)) continue;
    if (block.type === 'text') text.push(String(block.text ?? ''));
    else if (block.type === 'thinking') reasoning.push(String(block.thinking ?? ''));
    else if (block.type === 'tool_use') {
      toolCalls.push({ id: String(block.id ?? ''), name: String(block.name ?? ''), arguments: block.input });
    }
  }
  const out: RecordedMessage = { role: 'assistant', content: text.join('') };
  if (reasoning.length > 0) out.reasoning = reasoning.join('\n');
  if (toolCalls.length > 0) out.toolCalls = toolCalls;
  return out;
}

// One Anthropic user turn carries tool results and text side by side; split it into `tool`
// turns and `user` turns, in order, so both formats read the same.
function normalizeAnthropicUser(content: unknown): RecordedMessage[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  const out: RecordedMessage[] = [];
  let pending: string[] = [];
  const flushUser = (): void => {
    if (pending.length > 0) out.push({ role: 'user', content: pending.join('\n') });
    pending = [];
  };
  for (const block of asArray(content)) {
    if (!isRecord(block)) continue;
    if (block.type === 'tool_result') {
      flushUser();
      const result: RecordedMessage = {
        role: 'tool',
        content:
          typeof block.content === 'string' ? block.content : flattenAnthropicText(block.content, '\n'),
        toolCallId: String(block.tool_use_id ?? ''),
      };
      if (typeof block.is_error === 'boolean') result.isError = block.is_error;
      out.push(result);
    } else if (block.type === 'text') {
      pending.push(String(block.text ?? ''));
    } else if (block.type === 'image') {
      pending.push('[image]');
    }
  }
  flushUser();
  return out;
}

function flattenAnthropicText(blocks: unknown, separator: string): string {
  if (typeof blocks === 'string') return blocks;
  return asArray(blocks)
    .map((block) => {
      if (!isRecord(block)) return '';
      if (block.type === 'text') return String(block.text ?? '');
      if (block.type === 'image') return '[image]';
      return '';
    })
    .filter((text) => text.length > 0)
    .join(separator);
}

function parseMaybeJson(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

// ---------------------------------------------------------------------------------------------
// Reply planning

function planReply(response: ScriptedResponse, request: RecordedRequest, nextId: () => string): PlannedReply {
  const reasoning = toChunks(response.reasoning);
  const text = toChunks(response.text);
  const toolCalls = (response.toolCalls ?? []).map((call) => ({
    id: call.id ?? nextId(),
    name: call.name,
    fragments: Array.isArray(call.arguments)
      ? call.arguments
      : splitEvenly(JSON.stringify(call.arguments), ARGUMENT_FRAGMENTS),
  }));
  const outputChars =
    [...reasoning, ...text].join('').length +
    toolCalls.reduce((sum, call) => sum + call.name.length + call.fragments.join('').length, 0);
  // Serialized messages rather than their text, so tool calls and results also grow the count.
  const inputChars =
    (request.system?.length ?? 0) + JSON.stringify(request.messages).length + JSON.stringify(request.tools).length;
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

function openaiFrames(plan: PlannedReply, model: string, n: number, includeUsage: boolean): string[] {
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

function anthropicFrames(plan: PlannedReply, model: string, n: number): string[] {
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

function renderWhole(api: ScriptedWireApi, plan: PlannedReply, model: string, n: number): unknown {
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

function errorBody(api: ScriptedWireApi, status: number, message: string): unknown {
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

// ---------------------------------------------------------------------------------------------
// Transport

function sendJson(res: ServerResponse, status: number, payload: unknown, headers: Record<string, string> = {}): void {
  const body = JSON.stringify(payload);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

function sendWhole(res: ServerResponse, response: ScriptedResponse, payload: unknown): void {
  if (response.hangAfterChunks !== undefined) return;
  if (response.dropAfterChunks !== undefined) {
    res.destroy();
    return;
  }
  sendJson(res, 200, payload, response.headers);
}

async function sendFrames(
  res: ServerResponse,
  frames: string[],
  response: ScriptedResponse,
  lifetime: AbortSignal,
): Promise<void> {
  let closed = false;
  res.on('close', () => {
    closed = true;
  });
  res.writeHead(200, {
    ...response.headers,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  // Headers go out now, so a client sees the response start even when zero chunks follow.
  res.flushHeaders();
  for (let i = 0; i < frames.length; i++) {
    if (response.hangAfterChunks === i) return;
    if (response.dropAfterChunks === i) {
      res.destroy();
      return;
    }
    if (i > 0 && response.chunkDelayMs) await sleep(response.chunkDelayMs, lifetime);
    if (closed || lifetime.aborted) return;
    await write(res, frames[i] as string);
  }
  if (response.hangAfterChunks !== undefined && response.hangAfterChunks >= frames.length) return;
  if (response.dropAfterChunks !== undefined && response.dropAfterChunks >= frames.length) {
    res.destroy();
    return;
  }
  if (!closed) res.end();
}

// Waits for the write to flush, so a following destroy() cannot discard chunks already "sent".
function write(res: ServerResponse, frame: string): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('close', done);
      resolve();
    };
    res.once('close', done);
    res.write(frame, done);
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
