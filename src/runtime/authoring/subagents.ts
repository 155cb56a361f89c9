/**
 * Subagents (skills-subagents-mcp.md §2): `defineSubagent`, `GeneralSubagent`, and the `task`
 * tool that delegates to one. A delegate renders fresh in a subagent frame and runs to completion
 * in a child conversation of its own (recorded as its own stream, see task-run.ts) that shares the
 * parent's environment; only its final text returns to the parent.
 */
import * as v from 'valibot';
import type { ToolDefinition } from './define-tool.ts';
import { DelegationDepthExceededError } from '../common/errors.ts';
import { THINKING_LEVELS } from '../model/model-registry.ts';
import type { ThinkingLevel } from '../common/types.ts';

/** The deepest level a delegate (or a harness conversation) runs at; the main conversation is 0. */
export const DELEGATION_DEPTH_CAP = 4;

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
  // The general delegate is recognised by its agent function, not by object identity: a per-mount
  // override spreads it into a new object (`{ ...GeneralSubagent, model }`) and must still register.
  if (def.name === GENERAL_SUBAGENT_NAME && def.agent !== GeneralSubagent.agent) {
    throw new Error(
      `[flue] ${site}: the name "${GENERAL_SUBAGENT_NAME}" is reserved for GeneralSubagent; give this subagent another name (or declare useSubagent(GeneralSubagent)).`,
    );
  }
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

/** The framework-reserved name `GeneralSubagent` registers under. */
export const GENERAL_SUBAGENT_NAME = 'flue-general';

/** A blank general-purpose delegate: the shared environment and the parent's model, nothing else. */
export const GeneralSubagent: SubagentDefinition = Object.freeze({
  name: GENERAL_SUBAGENT_NAME,
  description:
    'A general-purpose agent with a fresh context and the workspace tools. Give it complete, self-contained instructions: it sees none of this conversation.',
  agent: () => undefined,
});

/**
 * The system prompt's `## Available Agents` section: the one place the roster is rendered. It is
 * always present (the `task` tool always is); `entries` is the roster to show — the conversation's
 * frozen baseline in the main conversation. With no entries it says none are declared.
 */
export function rosterSection(entries: readonly { readonly name: string; readonly description: string }[]): string {
  if (entries.length === 0) {
    return ['## Available Agents', 'No subagents are declared for this agent. Do not call the `task` tool.'].join('\n');
  }
  return [
    '## Available Agents',
    'Delegate focused work with the `task` tool, naming one of these agents:',
    ...entries.map((entry) => `- **${entry.name}** — ${entry.description}`),
  ].join('\n');
}

const taskInput = v.object({
  prompt: v.string(),
  agent: v.pipe(v.string(), v.minLength(1)),
  description: v.optional(v.string()),
  cwd: v.optional(
    v.pipe(
      v.string(),
      v.description('Working directory for the agent, resolved against yours; it must be an existing directory of the sandbox.'),
    ),
  ),
  attachments: v.optional(
    v.pipe(v.array(v.object({ id: v.string() })), v.description('Images from this conversation to hand to the agent, by attachment id.')),
  ),
});

/** The `task` tool as the model sees it: a static spec (its execution runs through task-run.ts). */
export const taskTool: ToolDefinition = Object.freeze({
  name: 'task',
  description:
    'Delegate a focused task to one of the agents listed under "Available Agents" in the system prompt. Give complete instructions: the agent sees none of this conversation. Returns its final answer.',
  input: taskInput,
  run() {
    throw new Error('[flue] The task tool runs through the engine.');
  },
});

/** What one `task` call resolves to: an immediate tool result, or a delegate to run. */
export type TaskResolution =
  | { kind: 'result'; isError: boolean; content: string; undeclared?: true }
  | {
      kind: 'run';
      subagent: SubagentDefinition;
      prompt: string;
      depth: number;
      /** The `cwd` argument as given (resolved against the delegating sandbox by the caller). */
      cwd?: string;
      /** Attachment ids to forward, deduplicated in first-mention order. */
      attachmentIds: string[];
    };

/**
 * Resolves a `task` call against the live roster of the delegating render. An unknown agent is a
 * factual miss (not an error); `depth` is the delegating conversation's depth (the main
 * conversation is 0), and the delegate runs one level deeper: delegates run at depths 1 to the cap.
 */
export function resolveTask(args: unknown, subagents: readonly SubagentDefinition[], depth: number): TaskResolution {
  const parsed = v.safeParse(taskInput, args ?? {});
  if (!parsed.success) {
    return {
      kind: 'result',
      isError: true,
      content: `Arguments for tool "task" do not match the required schema: ${parsed.issues.map((issue) => issue.message).join('; ')}.`,
    };
  }
  const { prompt, agent, cwd, attachments } = parsed.output;
  const subagent = subagents.find((candidate) => candidate.name === agent);
  if (subagent === undefined) {
    const names = subagents.map((candidate) => candidate.name);
    return {
      kind: 'result',
      isError: false,
      undeclared: true,
      content: `Subagent "${agent}" is not declared. Available subagents: ${names.length ? names.join(', ') : '(none)'}.`,
    };
  }
  if (depth + 1 > DELEGATION_DEPTH_CAP)
    return { kind: 'result', isError: true, content: new DelegationDepthExceededError(DELEGATION_DEPTH_CAP).message };
  const attachmentIds = [...new Set((attachments ?? []).map((attachment) => attachment.id))];
  return { kind: 'run', subagent, prompt, depth: depth + 1, ...(cwd === undefined ? {} : { cwd }), attachmentIds };
}
