/**
 * The scripted model server's public shapes: the script (`ScriptStep`, `ScriptedResponse`), what
 * it records of each request (`RecordedRequest`), and the server handle.
 */

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

export type ScriptStep = ScriptedResponse | ((request: RecordedRequest) => ScriptedResponse | Promise<ScriptedResponse>);

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
