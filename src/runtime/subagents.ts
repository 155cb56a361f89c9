/**
 * Subagents (skills-subagents-mcp.md §2): `defineSubagent`, `GeneralSubagent`, and the `task`
 * tool that delegates to one. A delegate renders fresh in a subagent frame and runs to completion
 * in a detached conversation of its own that shares the parent's environment; only its final
 * text returns to the parent.
 */
import * as v from 'valibot';
import type { ToolDefinition } from './define-tool.ts';
import { DelegationDepthExceededError } from './errors.ts';
import { DELEGATION_DEPTH_CAP, createHarness, type HarnessDeps } from './harness.ts';
import { THINKING_LEVELS } from './model-registry.ts';
import { type RenderResult, render } from './render.ts';
import type { ThinkingLevel } from './types.ts';

export interface SubagentDefinition {
  name: string;
  description: string;
  /** The delegate's whole world: its instructions, tools, skills and nested subagents. */
  agent: () => string | undefined | void;
  model?: string;
  thinkingLevel?: ThinkingLevel;
}

const KNOWN_KEYS = new Set(['name', 'description', 'agent', 'model', 'thinkingLevel']);

export function validateSubagent(value: unknown, site: string): SubagentDefinition {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(`[flue] ${site} requires a subagent definition object.`);
  }
  const def = value as Record<string, unknown>;
  for (const key of Object.keys(def)) {
    if (!KNOWN_KEYS.has(key)) throw new Error(`[flue] ${site} got an unknown field "${key}". Known fields: ${[...KNOWN_KEYS].join(', ')}.`);
  }
  const label = typeof def.name === 'string' && def.name ? `subagent "${def.name}"` : 'a subagent';
  if (typeof def.name !== 'string' || def.name.trim() === '') throw new Error(`[flue] ${site}: name must be a non-empty string.`);
  if (typeof def.description !== 'string' || def.description.trim() === '') {
    throw new Error(`[flue] ${site}: ${label} needs a non-empty description (the model decides when to delegate from it).`);
  }
  if (typeof def.agent !== 'function') throw new Error(`[flue] ${site}: ${label} needs an agent function.`);
  if (def.model !== undefined && (typeof def.model !== 'string' || def.model.trim() === '')) {
    throw new Error(`[flue] ${site}: ${label} model must be a non-empty "provider-id/model-id" string.`);
  }
  if (def.thinkingLevel !== undefined && !THINKING_LEVELS.includes(def.thinkingLevel as ThinkingLevel)) {
    throw new Error(`[flue] ${site}: ${label} thinkingLevel must be one of ${THINKING_LEVELS.join(', ')}.`);
  }
  return Object.freeze({ ...(def as unknown as SubagentDefinition) });
}

export function defineSubagent(definition: SubagentDefinition): SubagentDefinition {
  return validateSubagent(definition, 'defineSubagent()');
}

/** A blank general-purpose delegate: the shared environment and the parent's model, nothing else. */
export const GeneralSubagent: SubagentDefinition = Object.freeze({
  name: 'flue-general',
  description:
    'A general-purpose agent with a fresh context and the workspace tools. Give it complete, self-contained instructions: it sees none of this conversation.',
  agent: () => undefined,
});

/** The system-prompt section naming the delegates the `task` tool can reach. */
export function rosterSection(subagents: readonly SubagentDefinition[]): string {
  return [
    '## Available Agents',
    'Delegate focused work with the `task` tool, naming one of these agents:',
    ...subagents.map((subagent) => `- **${subagent.name}** — ${subagent.description}`),
  ].join('\n');
}

const taskInput = v.object({
  prompt: v.string(),
  agent: v.pipe(v.string(), v.minLength(1)),
  description: v.optional(v.string()),
  cwd: v.optional(v.string()),
});

/** The `task` tool as the model sees it (its execution runs through `runTask`). */
export const taskTool: ToolDefinition = Object.freeze({
  name: 'task',
  description:
    'Delegate a focused task to one of the agents listed under "Available Agents" in the system prompt. Give complete instructions: the agent sees none of this conversation. Returns its final answer.',
  input: taskInput,
  run() {
    throw new Error('[flue] The task tool runs through the engine.');
  },
});

export interface TaskContext {
  /** The live roster of the delegating render. */
  subagents: readonly SubagentDefinition[];
  /** The delegating conversation's harness settings (model, signal, environment, depth). */
  harness: Omit<HarnessDeps, 'name' | 'render'>;
}

/** Runs one `task` call; the result text is what the parent model sees. */
export async function runTask(args: unknown, context: TaskContext): Promise<{ isError: boolean; content: string }> {
  const parsed = v.safeParse(taskInput, args ?? {});
  if (!parsed.success) {
    return { isError: true, content: `Arguments for tool "task" do not match the required schema: ${parsed.issues.map((issue) => issue.message).join('; ')}.` };
  }
  const { prompt, agent } = parsed.output;
  const subagent = context.subagents.find((candidate) => candidate.name === agent);
  if (subagent === undefined) {
    const names = context.subagents.map((candidate) => candidate.name);
    return { isError: false, content: `Subagent "${agent}" is not declared. Available subagents: ${names.length ? names.join(', ') : '(none)'}.` };
  }
  const depth = context.harness.depth + 1;
  if (depth >= DELEGATION_DEPTH_CAP) return { isError: true, content: new DelegationDepthExceededError(DELEGATION_DEPTH_CAP).message };
  const delegate = createHarness({
    ...context.harness,
    name: `task:${subagent.name}`,
    depth,
    modelSpec: subagent.model ?? context.harness.modelSpec,
    thinkingLevel: subagent.thinkingLevel ?? context.harness.thinkingLevel,
    render: (): RenderResult =>
      render(subagent.agent, {
        kind: 'subagent',
        scope: {
          delivery: { kind: 'user', body: prompt },
          readState: () => ({ found: false }),
          setState: () => {
            throw new Error('[flue] A subagent has no persistent state.');
          },
          writeData: () => {
            throw new Error('[flue] A subagent cannot write message data.');
          },
          dispatch: () => Promise.reject(new Error('[flue] A subagent cannot dispatch messages.')),
        },
      }),
  });
  try {
    const { text } = await delegate.prompt(prompt);
    return { isError: false, content: text || '(task completed with no text)' };
  } catch (error) {
    return { isError: true, content: error instanceof Error ? error.message : String(error) };
  }
}
