/**
 * Rendering: the agent function runs inside a hook frame and its hooks record declarations onto
 * it. Nothing survives a render but the returned declarations; the engine renders again before
 * every model call.
 */
import type { ToolDefinition } from './define-tool.ts';
import { AgentDefinitionError } from '../common/errors.ts';
import { asyncAgentError, hookUsageError } from '../common/definition-errors.ts';
import { type Agent, isAsyncFunction } from './identity.ts';
import type { AgentTool, Sandbox, SandboxFactory } from '../sandbox/types.ts';
import type { SubagentDefinition } from './subagents.ts';
import type { McpConnectionDefinition } from '../mcp/definition.ts';
import type { SkillReference } from '../skills/define-skill.ts';
import type {
  AgentAppendMessage,
  CompactionConfig,
  DeliveredMessage,
  DeliveredMessageInput,
  DispatchReceipt,
  FlueHarness,
  FlueLogger,
  PromptUsage,
  ScheduledTimer,
  ThinkingLevel,
  TimerOptions,
} from '../common/types.ts';
import { describeValue } from '../common/values.ts';

export interface AgentResponseToolCall {
  tool: string;
  isError: boolean;
}

export interface AgentStartContext {
  readonly append: (message: AgentAppendMessage) => void;
  readonly harness: FlueHarness;
  readonly log: FlueLogger;
  readonly signal: AbortSignal;
}

export interface AgentFinishContext extends AgentStartContext {
  readonly response: { readonly toolCalls: readonly AgentResponseToolCall[]; readonly usage: PromptUsage };
}

export interface ResponseStartContext {
  readonly metadata: Record<string, unknown>;
  readonly log: FlueLogger;
}

export interface ResponseFinishContext {
  readonly metadata: Record<string, unknown>;
  readonly response: { readonly usage: PromptUsage; readonly toolCalls: readonly AgentResponseToolCall[] };
  readonly log: FlueLogger;
}

export type ResponseMetadataCallback<C> = (ctx: C) => Record<string, unknown> | void;

/** What the engine lends a render: reads are snapshots, effects go through the engine. */
export interface RenderScope {
  readonly instanceId?: string;
  readonly delivery?: DeliveredMessage;
  readonly initialData?: unknown;
  readState(name: string): { found: true; value: unknown } | { found: false };
  /** `next` may be an updater; `defaultValue` is what an updater sees when nothing was written. */
  setState(name: string, next: unknown, defaultValue: unknown): void;
  writeData(name: string, data: unknown): void;
  /** `useTimer()`: the conversation's timers as this response leaves them, and its pending writes. */
  readonly timers?: {
    read(): ScheduledTimer[];
    /** `framework`: a timer of the framework's own (`flue:` names), such as an approval's expiry. */
    schedule(name: string, options: TimerOptions, framework?: boolean): ScheduledTimer;
    cancel(name: string, framework?: boolean): boolean;
  };
  dispatch(message: DeliveredMessageInput): Promise<DispatchReceipt>;
  /** Data-writer names of the previous render; they must not change between renders. */
  readonly dataWriterNames?: readonly string[];
}

export interface RenderResult {
  readonly instructions: string | undefined;
  readonly model: { spec: string; thinkingLevel?: ThinkingLevel; compaction?: false | CompactionConfig } | undefined;
  readonly tools: readonly ToolDefinition[];
  /** The `useSandbox()` declaration of this render, if any (its presence may vary by render). */
  readonly sandbox: SandboxDeclaration | undefined;
  readonly subagents: readonly SubagentDefinition[];
  readonly skills: readonly SkillReference[];
  /** `useMcpConnection()` declarations; submission-scoped (the first render of an attempt wins). */
  readonly mcpConnections: readonly McpConnectionDefinition[];
  readonly dataWriterNames: readonly string[];
  readonly agentStart: readonly ((ctx: AgentStartContext) => void | Promise<void>)[];
  readonly agentFinish: readonly ((ctx: AgentFinishContext) => void | Promise<void>)[];
  readonly responseStart: readonly ResponseMetadataCallback<ResponseStartContext>[];
  readonly responseFinish: readonly ResponseMetadataCallback<ResponseFinishContext>[];
}

export interface SandboxDeclaration {
  factory: SandboxFactory;
  cwd?: string;
  /**
   * The built-in tools (read, write, edit, bash, grep, glob) unless the factory brings its own.
   * Carried by the declaration so the engine imports them only where `useSandbox` is imported.
   */
  builtinTools: (sandbox: Sandbox) => AgentTool[];
}

export interface RenderFrame {
  readonly kind: 'root' | 'subagent';
  readonly scope: RenderScope | undefined;
  readonly props: { id: string } | undefined;
  instructions: string[];
  model: RenderResult['model'];
  tools: ToolDefinition[];
  toolNames: Set<string>;
  sandbox: SandboxDeclaration | undefined;
  subagents: SubagentDefinition[];
  skills: SkillReference[];
  mcpConnections: McpConnectionDefinition[];
  stateNames: Set<string>;
  dataWriterNames: string[];
  agentStart: ((ctx: AgentStartContext) => void | Promise<void>)[];
  agentFinish: ((ctx: AgentFinishContext) => void | Promise<void>)[];
  responseStart: ResponseMetadataCallback<ResponseStartContext>[];
  responseFinish: ResponseMetadataCallback<ResponseFinishContext>[];
  /** Set by the first guarded agent function that runs in this frame (`__flueEnterAgent`). */
  entered: boolean;
}

let current: RenderFrame | undefined;

function reentrantRenderError(): Error {
  return hookUsageError(
    '[flue] Re-entrant agent render. An agent function may not render another agent function; share behaviour through custom hooks and delegate through useSubagent().',
  );
}

/**
 * Not public API: the build puts a call to this at the top of every agent function's body
 * (src/build/agent-guard.ts). The first agent function a render enters is the one rendered; a
 * second one is an agent function calling another directly, which would mix its hooks into this
 * frame, so it throws as a nested render does. Outside a render it does nothing: the function's
 * hooks then report their own misuse.
 */
export function __flueEnterAgent(): void {
  const frame = current;
  if (frame === undefined) return;
  if (frame.entered) throw reentrantRenderError();
  frame.entered = true;
}

export function currentFrame(hook: string): RenderFrame {
  if (current === undefined) {
    throw hookUsageError(
      `[flue] ${hook}() was called outside an agent function. Hooks work only while an agent function renders (synchronously in its body or in a custom hook it calls).`,
    );
  }
  return current;
}

/** Setters, writers and dispatchers are effects; a render is a pure read. */
export function assertNotRendering(what: string): void {
  if (current !== undefined) {
    throw hookUsageError(
      `[flue] ${what} cannot be called while an agent function renders. Call it from a tool, an event hook callback, or other async work.`,
    );
  }
}

/** Props whose `id` getter throws: a bare render has no instance. */
function bareProps(): { id: string } {
  return Object.defineProperty({}, 'id', {
    enumerable: true,
    get() {
      throw new Error('[flue] props.id is not available in a bare render: there is no agent instance behind it.');
    },
  }) as { id: string };
}

export function render(
  agent: Agent | (() => string | undefined | void),
  options: { kind?: 'root' | 'subagent'; scope?: RenderScope; props?: { id: string } } = {},
): RenderResult {
  if (current !== undefined) throw reentrantRenderError();
  // Checked before the call, so an async body's hooks never run into a frame that is discarded.
  if (isAsyncFunction(agent)) throw asyncAgentError(agentIdentityOf(agent));
  const kind = options.kind ?? 'root';
  const frame: RenderFrame = {
    kind,
    scope: options.scope,
    props: options.props,
    instructions: [],
    model: undefined,
    tools: [],
    toolNames: new Set(),
    sandbox: undefined,
    subagents: [],
    skills: [],
    mcpConnections: [],
    stateNames: new Set(),
    dataWriterNames: [],
    agentStart: [],
    agentFinish: [],
    responseStart: [],
    responseFinish: [],
    entered: false,
  };
  current = frame;
  let returned: unknown;
  try {
    returned = kind === 'root' ? (agent as (props: { id: string }) => unknown)(options.props ?? bareProps()) : (agent as () => unknown)();
  } finally {
    current = undefined;
  }
  if (returned !== null && typeof returned === 'object' && typeof (returned as { then?: unknown }).then === 'function') {
    // Swallow the stray promise's eventual rejection: the render already failed loudly.
    (returned as Promise<unknown>).then(undefined, () => {});
    throw asyncAgentError(agentIdentityOf(agent));
  }
  if (returned !== undefined && typeof returned !== 'string') {
    throw new AgentDefinitionError(
      'return_value',
      `[flue] An agent returns its instruction string (or nothing). ${agentLabel(agent)} returned ${describeValue(returned)}.`,
      { ...(agentIdentityOf(agent) === undefined ? {} : { agent: agentIdentityOf(agent) }) },
    );
  }
  const previous = options.scope?.dataWriterNames;
  if (previous !== undefined) assertSameDataWriters(previous, frame.dataWriterNames);
  const parts = [...(returned ? [returned] : []), ...frame.instructions];
  return {
    instructions: parts.length === 0 ? undefined : parts.join('\n\n'),
    model: frame.model,
    tools: frame.tools,
    sandbox: frame.sandbox,
    subagents: frame.subagents,
    skills: frame.skills,
    mcpConnections: frame.mcpConnections,
    dataWriterNames: frame.dataWriterNames,
    agentStart: frame.agentStart,
    agentFinish: frame.agentFinish,
    responseStart: frame.responseStart,
    responseFinish: frame.responseFinish,
  };
}

function assertSameDataWriters(previous: readonly string[], now: readonly string[]): void {
  const added = now.filter((name) => !previous.includes(name));
  const removed = previous.filter((name) => !now.includes(name));
  if (added.length === 0 && removed.length === 0) return;
  throw hookUsageError(
    `[flue] useDataWriter() names must be identical on every render: message data added ${added.join(', ') || 'nothing'}; removed ${removed.join(', ') || 'nothing'}.`,
  );
}

/** The name an error can quote: `agentName` static, else the function name. */
function agentIdentityOf(agent: object): string | undefined {
  const named = agent as { agentName?: unknown; name?: unknown };
  const name = typeof named.agentName === 'string' ? named.agentName : named.name;
  return typeof name === 'string' && name !== '' ? name : undefined;
}

function agentLabel(agent: object): string {
  const name = (agent as { name?: unknown }).name;
  return typeof name === 'string' && name ? `Agent "${name}"` : 'The agent';
}

/** Renders a delegate fresh in a subagent frame; `useDelivery()` there is the task prompt. */
export function renderDelegate(subagent: SubagentDefinition, delivery: DeliveredMessage | undefined): RenderResult {
  return render(subagent.agent, {
    kind: 'subagent',
    scope: {
      delivery,
      readState: () => ({ found: false }),
      setState: () => {
        throw new Error('[flue] A subagent has no persistent state.');
      },
      writeData: () => {
        throw new Error('[flue] A subagent cannot write message data.');
      },
      dispatch: () => Promise.reject(new Error('[flue] A subagent cannot dispatch messages.')),
    },
  });
}
