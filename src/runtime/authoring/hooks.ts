/**
 * The agent hooks. Each records onto the current render frame; reads
 * are snapshots of this render, and effects (setters, writers, dispatchers) go through the
 * engine's scope and are refused while a render is on the stack.
 */
import * as v from 'valibot';
import { validateCompactionConfig } from '../model/compaction.ts';
import { type UseToolSignature, validateToolDefinition } from './define-tool.ts';
import { FRAMEWORK_TIMER_PREFIX } from '../common/timer-names.ts';
import { ToolNameConflictError } from '../common/errors.ts';
import { hookUsageError } from '../common/definition-errors.ts';
import { THINKING_LEVELS } from '../model/model-registry.ts';
import { type SubagentDefinition, validateSubagent } from './subagents.ts';
import type { SkillDefinition, SkillReference } from '../skills/define-skill.ts';
import { collectSkills } from '../skills/package.ts';
import {
  type AgentFinishContext,
  type AgentStartContext,
  type RenderFrame,
  type ResponseFinishContext,
  type ResponseMetadataCallback,
  type ResponseStartContext,
  assertNotRendering,
  currentFrame,
} from './render.ts';
import type { CompactionConfig, Delivery, DeliveredMessageInput, DispatchReceipt, ThinkingLevel, TimerHandle } from '../common/types.ts';

/** The frame of the hook being called, which must be the root agent's (not a subagent's). */
export function rootFrame(hook: string): RenderFrame {
  const frame = currentFrame(hook);
  if (frame.kind === 'subagent') {
    throw hookUsageError(`[flue] ${hook}() cannot be used in a subagent's agent function; declare it on the root agent.`);
  }
  return frame;
}

export interface UseModelOptions {
  thinkingLevel?: ThinkingLevel;
  compaction?: false | CompactionConfig;
}

export function useModel(model: string, options?: UseModelOptions): void {
  const frame = rootFrame('useModel');
  if (frame.model !== undefined) throw hookUsageError('[flue] useModel() was called twice in one render; declare the model once.');
  if (typeof model !== 'string' || model.trim() === '') {
    throw hookUsageError(`[flue] useModel() requires a non-empty model specifier such as 'anthropic/claude-haiku-4-5'.`);
  }
  const declared: NonNullable<RenderFrame['model']> = { spec: model };
  if (options !== undefined) {
    if (typeof options !== 'object' || options === null || Array.isArray(options)) {
      throw hookUsageError('[flue] useModel() options must be a plain object.');
    }
    for (const key of Object.keys(options)) {
      if (key !== 'thinkingLevel' && key !== 'compaction') {
        throw hookUsageError(`[flue] useModel() got an unknown option "${key}". Known options: thinkingLevel, compaction.`);
      }
    }
    if (options.thinkingLevel !== undefined) {
      if (!THINKING_LEVELS.includes(options.thinkingLevel)) {
        throw hookUsageError(
          `[flue] useModel() thinkingLevel must be one of ${THINKING_LEVELS.join(', ')}; got ${JSON.stringify(options.thinkingLevel)}.`,
        );
      }
      declared.thinkingLevel = options.thinkingLevel;
    }
    if (options.compaction !== undefined) declared.compaction = validateCompactionConfig(options.compaction);
  }
  frame.model = declared;
}

export const useTool: UseToolSignature = (tool: unknown): void => {
  const frame = currentFrame('useTool');
  const definition = validateToolDefinition(tool, 'useTool');
  if (frame.toolNames.has(definition.name)) {
    throw new ToolNameConflictError(`Duplicate tool name "${definition.name}".`);
  }
  frame.toolNames.add(definition.name);
  frame.tools.push(definition);
};

/** Mounts a skill (a `defineSkill` value or a `SKILL.md` import); allowed in subagent frames. */
export function useSkill(skill: SkillDefinition | SkillReference): void {
  const frame = currentFrame('useSkill');
  frame.skills = collectSkills([...frame.skills, skill]);
}

/** Mounts a delegate the `task` tool can reach; allowed in subagent frames (nesting). */
export function useSubagent(subagent: SubagentDefinition): void {
  const frame = currentFrame('useSubagent');
  let definition: SubagentDefinition;
  try {
    definition = validateSubagent(subagent, 'useSubagent()');
  } catch (error) {
    // Typed, so the caller of the failed submission sees the reason rather than an internal error.
    throw hookUsageError((error as Error).message);
  }
  if (frame.subagents.some((declared) => declared.name === definition.name)) {
    throw hookUsageError(`[flue] useSubagent("${definition.name}") was declared twice in one render.`);
  }
  frame.subagents.push(definition);
}

export function useInstruction(text: string): void {
  const frame = currentFrame('useInstruction');
  if (typeof text !== 'string' || text.trim() === '') {
    throw hookUsageError('[flue] useInstruction() requires a non-empty string.');
  }
  frame.instructions.push(text);
}

export type StateSetter<T> = (value: T | ((previous: T) => T)) => void;

export function usePersistentState<T>(name: string, defaultValue: T): [T, StateSetter<T>];
export function usePersistentState<T = unknown>(name: string): [T | undefined, StateSetter<T | undefined>];
export function usePersistentState<T>(name: string, defaultValue?: T): [T | undefined, StateSetter<T | undefined>] {
  const frame = rootFrame('usePersistentState');
  if (typeof name !== 'string' || name === '') throw hookUsageError('[flue] usePersistentState() requires a non-empty state name.');
  if (frame.stateNames.has(name)) throw hookUsageError(`[flue] usePersistentState("${name}") was declared twice in one render.`);
  frame.stateNames.add(name);
  const scope = frame.scope;
  const read = scope?.readState(name);
  const value = read?.found ? (read.value as T) : defaultValue;
  const setter: StateSetter<T | undefined> = (next) => {
    assertNotRendering(`The setter of usePersistentState("${name}")`);
    if (scope === undefined) {
      throw hookUsageError(`[flue] The setter of usePersistentState("${name}") has no durable runtime behind it (bare render).`);
    }
    // Updaters are resolved by the engine at call time, so two updaters in one turn compose.
    scope.setState(name, next, defaultValue);
  };
  return [value, setter];
}

export function useInitialData<T = unknown>(): T {
  const frame = currentFrame('useInitialData');
  if (frame.kind === 'subagent') return undefined as T;
  return frame.scope?.initialData as T;
}

/**
 * The message being handled, with a non-enumerable `origin` saying who delivered it: `'app'`
 * (trusted server code), `'http'` (any client of `createAgentRouter()`) or `'agent'` (the agent
 * itself). Check it before letting a delivery's attributes grant anything.
 */
export function useDelivery(): Delivery {
  const frame = currentFrame('useDelivery');
  const delivery = frame.scope?.delivery;
  if (delivery === undefined) {
    throw hookUsageError(
      '[flue] useDelivery() found no delivered message behind this render. It is available while the runtime handles a delivery.',
    );
  }
  if (Object.hasOwn(delivery, 'origin')) return delivery as Delivery;
  // A scope lent without an origin (a hand-built test scope) gets the least trusted one.
  return Object.defineProperty({ ...delivery }, 'origin', { value: 'http', enumerable: false }) as Delivery;
}

export function useDispatchMessage(): (message: DeliveredMessageInput) => Promise<DispatchReceipt> {
  const frame = rootFrame('useDispatchMessage');
  const scope = frame.scope;
  return async (message) => {
    assertNotRendering('The dispatcher of useDispatchMessage()');
    if (scope === undefined)
      throw hookUsageError('[flue] The dispatcher of useDispatchMessage() has no agent instance behind it (bare render).');
    return scope.dispatch(message);
  };
}

/**
 * Durable timers of the agent's own conversation (a Flue Workers addition). A due timer
 * delivers a `timer` signal that `useDelivery()` reads; timers survive restarts, deploys and
 * crashes and cost nothing while they wait.
 */
export function useTimer(): TimerHandle {
  const frame = rootFrame('useTimer');
  const timers = frame.scope?.timers;
  const effect = (method: string) => {
    assertNotRendering(`useTimer().${method}()`);
    if (timers === undefined) throw hookUsageError(`[flue] useTimer().${method}() has no durable runtime behind it (bare render).`);
    return timers;
  };
  return {
    // The framework's own timers (an approval's expiry) are not the agent's to see or cancel.
    pending: Object.freeze((timers?.read() ?? []).filter((timer) => !timer.name.startsWith(FRAMEWORK_TIMER_PREFIX))),
    schedule: (name, options) => effect('schedule').schedule(name, options),
    cancel: (name) => effect('cancel').cancel(name),
  };
}

export function useDataWriter<S extends v.GenericSchema>(name: string, options: { schema: S }): (data: v.InferOutput<S>) => void;
export function useDataWriter(name: string): (data: unknown) => void;
export function useDataWriter(name: string, options?: { schema: v.GenericSchema }): (data: unknown) => void {
  const frame = rootFrame('useDataWriter');
  if (typeof name !== 'string' || name === '') throw hookUsageError('[flue] useDataWriter() requires a non-empty part name.');
  if (frame.dataWriterNames.includes(name)) throw hookUsageError(`[flue] useDataWriter("${name}") was declared twice in one render.`);
  if (options !== undefined) {
    for (const key of Object.keys(options)) {
      if (key !== 'schema') throw hookUsageError(`[flue] useDataWriter() got an unknown option "${key}". Known options: schema.`);
    }
  }
  frame.dataWriterNames.push(name);
  const scope = frame.scope;
  const schema = options?.schema;
  return (data) => {
    assertNotRendering(`The writer of useDataWriter("${name}")`);
    if (scope === undefined)
      throw hookUsageError(`[flue] The writer of useDataWriter("${name}") has no agent instance behind it (bare render).`);
    let value = data;
    if (schema !== undefined) {
      const parsed = v.safeParse(schema, data);
      if (!parsed.success) {
        throw hookUsageError(
          `[flue] useDataWriter("${name}") write does not match its schema: ${parsed.issues.map((i) => i.message).join('; ')}`,
        );
      }
      value = parsed.output;
    }
    scope.writeData(name, value);
  };
}

export function useAgentStart(run: (ctx: AgentStartContext) => void | Promise<void>): void {
  const frame = rootFrame('useAgentStart');
  assertFunction('useAgentStart', run);
  frame.agentStart.push(run);
}

export function useAgentFinish(run: (ctx: AgentFinishContext) => void | Promise<void>): void {
  const frame = rootFrame('useAgentFinish');
  assertFunction('useAgentFinish', run);
  frame.agentFinish.push(run);
}

export function useResponseStart(run: ResponseMetadataCallback<ResponseStartContext>): void {
  const frame = rootFrame('useResponseStart');
  assertFunction('useResponseStart', run);
  frame.responseStart.push(run);
}

export function useResponseFinish(run: ResponseMetadataCallback<ResponseFinishContext>): void {
  const frame = rootFrame('useResponseFinish');
  assertFunction('useResponseFinish', run);
  frame.responseFinish.push(run);
}

function assertFunction(hook: string, value: unknown): void {
  if (typeof value !== 'function') throw hookUsageError(`[flue] ${hook}() requires a callback function.`);
}
