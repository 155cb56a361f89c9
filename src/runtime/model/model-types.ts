/**
 * The model-facing shapes of pi-ai (`@earendil-works/pi-ai`, the model layer underneath the
 * runtime) that the public declarations mention: the messages of a model context as pi-ai holds
 * them in memory and the records store them, the tool calls in them, token usage, and a provider.
 *
 * They are declared here instead of imported, so that the package's declarations never load
 * pi-ai's: pi-ai's types pull in its provider SDKs' types and, through them, Node's globals, which
 * clash with the Workers runtime types in a Worker project that checks every `.d.ts`.
 *
 * The data shapes are structural copies of pi-ai's (the pinned version in package.json): each is
 * assignable to pi-ai's type of the same name and back, which test/api/model-types.test.ts checks,
 * so runtime code passes them to pi-ai and takes them from it unchanged. `Provider` and `Model` are
 * narrower: every pi-ai provider and chat model is one, but they list only what the runtime reads.
 * To use pi-ai's own types, import them from `@earendil-works/pi-ai`.
 */

export type JsonValue = null | boolean | number | string | readonly JsonValue[] | JsonObject;
export type JsonObject = { [key: string]: JsonValue };

/** A model API (wire format) name: pi-ai's known ones, or any other string. */
export type Api =
  | 'openai-completions'
  | 'mistral-conversations'
  | 'openai-responses'
  | 'azure-openai-responses'
  | 'openai-codex-responses'
  | 'anthropic-messages'
  | 'bedrock-converse-stream'
  | 'google-generative-ai'
  | 'google-vertex'
  | 'pi-messages'
  | (string & {});

export type ModelThinkingLevel = 'off' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max';

export interface TextContent {
  type: 'text';
  text: string;
  textSignature?: string;
}

export interface ThinkingContent {
  type: 'thinking';
  thinking: string;
  thinkingSignature?: string;
  /** The thinking was redacted by the provider; its opaque payload is in `thinkingSignature`. */
  redacted?: boolean;
}

export interface ImageContent {
  type: 'image';
  /** Base64. */
  data: string;
  mimeType: string;
}

export interface ToolCall {
  type: 'toolCall';
  id: string;
  name: string;
  arguments: JsonObject;
  thoughtSignature?: string;
  namespace?: string;
  /** Set when the model's arguments were not a JSON object (`arguments` is then `{}`). */
  argumentsError?: string;
}

export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  cacheWrite1h?: number;
  /** Reasoning tokens, a subset of `output`, when the provider reports them. */
  reasoning?: number;
  totalTokens: number;
  cost: {
    input: number;
    output: number;
    cacheRead: number;
    cacheWrite: number;
    total: number;
    totalFromProvider?: boolean;
  };
}

export type StopReason = 'pending' | 'stop' | 'length' | 'toolUse' | 'error' | 'aborted' | 'deferred';

export interface AssistantMessageDiagnostic {
  type: string;
  timestamp: number;
  error?: { name?: string; message: string; stack?: string; code?: string | number };
  details?: JsonObject;
}

export interface DeferredHandle {
  provider: string;
  modelId: string;
  api: string;
  id: string;
  expiresAt?: number;
  pollAfterMs?: number;
  data?: JsonValue;
}

/** A tool as the model is offered it: `parameters` is its arguments' JSON Schema. */
export interface Tool<TParameters extends object = object> {
  name: string;
  description: string;
  parameters: TParameters;
  constrainedSampling?:
    | false
    | { type: 'json_schema'; strict: 'prefer' | 'require' }
    | { type: 'grammar'; variants: Partial<Record<'openai_lark' | 'openai_regex', string>> };
}

export interface SystemMessage {
  role: 'system';
  content: string | TextContent[];
  sections?: Record<string, string | null>;
  toolsAdded?: Tool[];
  toolsRemoved?: { name: string }[];
  timestamp: number;
}

export interface UserMessage {
  role: 'user';
  content: string | (TextContent | ImageContent)[];
  timestamp: number;
}

export interface AssistantMessage {
  role: 'assistant';
  content: (TextContent | ThinkingContent | ToolCall)[];
  api: Api;
  provider: string;
  model: string;
  responseModel?: string;
  responseId?: string;
  providerThinkingLevel?: string;
  thinkingLevel?: ModelThinkingLevel;
  diagnostics?: AssistantMessageDiagnostic[];
  usage: Usage;
  stopReason: StopReason;
  deferred?: DeferredHandle;
  errorMessage?: string;
  rawStopReason?: string;
  endTurn?: boolean;
  /** Unix milliseconds when the request started. */
  timestamp: number;
  durationMs?: number;
}

export interface NestedToolCalls {
  calls: {
    id: string;
    name: string;
    arguments?: JsonObject;
    argumentsBytes?: number;
    status: 'ok' | 'error' | 'unfinished';
    durationMs?: number;
    error?: string;
  }[];
  complete: boolean;
}

export interface ToolResultMessage {
  role: 'toolResult';
  toolCallId: string;
  toolName: string;
  content: (TextContent | ImageContent)[];
  details?: JsonValue;
  usage?: Usage;
  nestedCalls?: NestedToolCalls;
  isError: boolean;
  timestamp: number;
  durationMs?: number;
}

export type Message = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage;

/** A chat model of a provider's catalog, by the fields the runtime reads (pi-ai's `Model` has more). */
export interface Model {
  id: string;
  name: string;
  api: Api;
  provider: string;
  baseUrl: string;
  input: ('text' | 'image')[];
  reasoning: boolean;
  contextWindow: number;
  maxTokens: number;
  headers?: Record<string, string>;
}

/**
 * A model provider: an object implementing pi-ai's `Provider` interface, as pi-ai's
 * `createProvider()` and provider factories, `cloudflareBindingProvider()` and
 * `scriptedProvider()` make. Declared by the members the runtime relies on; registering one hands
 * it to pi-ai, which uses the rest of pi-ai's contract (`auth`, streaming options, ...).
 */
export interface Provider {
  readonly id: string;
  readonly name: string;
  readonly baseUrl?: string;
  /** pi-ai's `ProviderAuth`: an `apiKey` and/or an `oauth` method. */
  readonly auth: { readonly apiKey?: object; readonly oauth?: object };
  /** The chat models the provider currently knows. */
  getModels(): readonly Model[];
  /** Streams one response to a normalized model context (pi-ai normalizes it before calling). */
  stream(model: Model, context: { messages: Message[] }, options?: object): AssistantMessageEventStream;
  streamSimple(model: Model, context: { messages: Message[] }, options?: object): AssistantMessageEventStream;
}

/**
 * pi-ai's stream of one response, by how it is read: its events (pi-ai's `AssistantMessageEvent`,
 * each with a `type` such as `text_delta` or `done`), and the final message.
 */
export interface AssistantMessageEventStream extends AsyncIterable<{ type: string }> {
  result(): Promise<AssistantMessage>;
}
