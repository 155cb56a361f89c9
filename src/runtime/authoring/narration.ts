/**
 * Dynamic resources. Tools, skills and subagents may be declared
 * conditionally, so the set the model can use changes between renders. The surfaces the model
 * already read stay frozen: the system prompt's skill catalog and agent roster are rendered from a
 * durable BASELINE snapshot (taken at first contact, retaken at each compaction). Every turn's
 * render is instead compared with the durable LAST-NARRATED snapshot, and what changed is
 * appended as framework signals:
 *
 * - `resources` — one per changed kind (`resource="tool|skill|subagent"`), delta lines then the
 *   kind's full roster;
 * - `instructions` — the composed instruction document changed (the live prompt carries it);
 * - `environment` — `useSandbox()` presence flipped; a full snapshot that supersedes that
 *   boundary's `resources` deltas.
 *
 * This module is the pure core: the snapshot shape (stored in `resource_snapshot` records), the
 * digests, the diff and the signal bodies. The engine decides when to emit (response-run.ts).
 */
import { type ToolDefinition, toolParameters } from './define-tool.ts';

export type ResourceKind = 'tool' | 'skill' | 'subagent';

/** One resource as the model sees it named. */
export interface ResourceEntry {
  name: string;
  description: string;
  /** Tools only: digest of the canonical JSON of the converted input schema. */
  schema?: string;
}

/** The declared resources of one render, in declaration order (persisted; keep it JSON). */
export interface ResourceSnapshot {
  tools: ResourceEntry[];
  skills: ResourceEntry[];
  subagents: ResourceEntry[];
  /** FNV-1a 64 of the composed instruction document (`undefined` digests as `''`). */
  instructionsDigest: string;
  /** Whether the render declared a sandbox (`useSandbox()`); its flip is an `environment` signal. */
  sandbox: boolean;
}

/** The prompt catalogs a baseline feeds: the `## Available Skills` and `## Available Agents` sections. */
export interface PromptCatalogs {
  readonly skills: readonly { readonly name: string; readonly description: string }[];
  readonly subagents: readonly { readonly name: string; readonly description: string }[];
}

// ── Digests ─────────────────────────────────────────────────────────────────────────────────

const utf8 = new TextEncoder();

/**
 * 64-bit FNV-1a over the UTF-8 bytes of `text`, as 16 lowercase hex digits (change detection only).
 * The hash is kept in four 16-bit limbs (low first) so every step stays in exact small-integer
 * arithmetic; the prime is 2^40 + 0x1b3.
 */
export function fnv1a64(text: string): string {
  let h0 = 0x2325;
  let h1 = 0x8422;
  let h2 = 0x9ce4;
  let h3 = 0xcbf2;
  for (const byte of utf8.encode(text)) {
    h0 ^= byte;
    const t0 = h0 * 0x1b3;
    const t1 = h1 * 0x1b3 + (t0 >>> 16);
    const t2 = h2 * 0x1b3 + h0 * 0x100 + (t1 >>> 16);
    const t3 = h3 * 0x1b3 + h1 * 0x100 + (t2 >>> 16);
    h0 = t0 & 0xffff;
    h1 = t1 & 0xffff;
    h2 = t2 & 0xffff;
    h3 = t3 & 0xffff;
  }
  return [h3, h2, h1, h0].map((limb) => limb.toString(16).padStart(4, '0')).join('');
}

/** How many instruction documents' digests are kept: an unchanged agent renders the same text at every turn. */
const KEPT_DIGESTS = 16;
const instructionDigests = new Map<string, string>();

/** The instruction document's digest; an agent without one digests as the empty string. */
export function digestInstructions(instructions: string | undefined): string {
  const text = instructions ?? '';
  let digest = instructionDigests.get(text);
  if (digest === undefined) {
    digest = fnv1a64(text);
    // The oldest goes first: a process that renders many documents keeps only the latest few.
    if (instructionDigests.size >= KEPT_DIGESTS) instructionDigests.delete(instructionDigests.keys().next().value!);
    instructionDigests.set(text, digest);
  }
  return digest;
}

/** JSON with object keys sorted at every depth, so equal schemas digest equally. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) => {
    if (inner === null || typeof inner !== 'object' || Array.isArray(inner)) return inner;
    return Object.fromEntries(Object.entries(inner as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  });
}

/** The snapshot of one render: what the model is offered at this turn boundary. */
export function resourceSnapshot(render: {
  tools: readonly ToolDefinition[];
  skills: readonly { name: string; description: string }[];
  subagents: readonly { name: string; description: string }[];
  instructions: string | undefined;
  sandbox: boolean;
}): ResourceSnapshot {
  return {
    tools: render.tools.map((tool) => ({ name: tool.name, description: tool.description, schema: schemaDigest(tool) })),
    skills: render.skills.map((skill) => ({ name: skill.name, description: skill.description })),
    subagents: render.subagents.map((agent) => ({ name: agent.name, description: agent.description })),
    instructionsDigest: digestInstructions(render.instructions),
    sandbox: render.sandbox,
  };
}

const digests = new WeakMap<ToolDefinition, string>();
/** How many schemas' digests are kept by their JSON, for tools declared anew at every render. */
const KEPT_SCHEMA_DIGESTS = 64;
const schemaDigests = new Map<string, string>();

/**
 * Tool definitions are frozen, so each one's schema digest is computed once. A tool written inline
 * in the agent (`useTool({ … })`) is a new definition at every render: its schema's JSON (the
 * converter writes keys in one order) finds the digest its earlier renders computed.
 */
function schemaDigest(tool: ToolDefinition): string {
  let digest = digests.get(tool);
  if (digest === undefined) {
    const parameters = toolParameters(tool);
    const json = JSON.stringify(parameters);
    digest = schemaDigests.get(json);
    if (digest === undefined) {
      digest = fnv1a64(canonicalJson(parameters));
      if (schemaDigests.size >= KEPT_SCHEMA_DIGESTS) schemaDigests.delete(schemaDigests.keys().next().value!);
      schemaDigests.set(json, digest);
    }
    digests.set(tool, digest);
  }
  return digest;
}

/**
 * Whether two snapshots offer the model the same: field by field, as their JSON would compare (an
 * absent schema is an undefined one). Asked at every turn boundary; serializing both cost more.
 */
export function sameSnapshot(a: ResourceSnapshot, b: ResourceSnapshot): boolean {
  return (
    a.instructionsDigest === b.instructionsDigest &&
    a.sandbox === b.sandbox &&
    sameEntries(a.tools, b.tools) &&
    sameEntries(a.skills, b.skills) &&
    sameEntries(a.subagents, b.subagents)
  );
}

function sameEntries(a: readonly ResourceEntry[], b: readonly ResourceEntry[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.name !== y.name || x.description !== y.description || x.schema !== y.schema) return false;
  }
  return true;
}

// ── Signal bodies ───────────────────────────────────────────────────────────────────────────

const NOUN: Record<ResourceKind, [singular: string, plural: string]> = {
  tool: ['tool', 'tools'],
  skill: ['skill', 'skills'],
  subagent: ['agent', 'agents'],
};

const KIND_FIELD = { tool: 'tools', skill: 'skills', subagent: 'subagents' } as const;

/** `- **<name>** — <description>`, without the dash part when there is no description. */
export function catalogLine(entry: { name: string; description?: string }): string {
  return entry.description ? `- **${entry.name}** — ${entry.description}` : `- **${entry.name}**`;
}

/**
 * The `resources` signal bodies for what changed since `previous`, one per changed kind, in
 * tool/skill/subagent order. An entry is updated when its description changed, or (tools) its
 * input-schema digest.
 */
export function narrate(previous: ResourceSnapshot, current: ResourceSnapshot): { kind: ResourceKind; body: string }[] {
  const out: { kind: ResourceKind; body: string }[] = [];
  for (const kind of ['tool', 'skill', 'subagent'] as const) {
    const before = new Map(previous[KIND_FIELD[kind]].map((entry) => [entry.name, entry] as const));
    const now = current[KIND_FIELD[kind]];
    const [one, many] = NOUN[kind];
    const lines: string[] = [];
    const added = now.filter((entry) => !before.has(entry.name));
    if (added.length > 0) {
      lines.push(added.length === 1 ? `New ${one} available:` : `New ${many} available:`);
      for (const entry of added) lines.push(catalogLine(entry));
    }
    const names = new Set(now.map((entry) => entry.name));
    for (const name of before.keys()) if (!names.has(name)) lines.push(`The ${one} "${name}" is no longer available.`);
    for (const entry of now) {
      const old = before.get(entry.name);
      if (old === undefined || (old.description === entry.description && old.schema === entry.schema)) continue;
      if (kind === 'tool') lines.push(`The tool "${entry.name}" was updated.`);
      else lines.push(`The ${one} "${entry.name}" was updated:`, catalogLine(entry));
    }
    if (lines.length === 0) continue;
    lines.push(`All available ${many}: ${now.map((entry) => entry.name).join(', ')}`);
    out.push({ kind, body: lines.join('\n') });
  }
  return out;
}

/** The whole body of the `instructions` signal: a marker of when the document changed. */
export const INSTRUCTIONS_UPDATED_BODY = 'System instructions updated.';

/**
 * The `environment` signal body: a full snapshot, not a delta. A sandbox flip can change what the
 * model believed about its files without any tool name changing, so everything is restated.
 */
export function environmentBody(state: {
  /** The new sandbox's working directory; undefined when the sandbox went away. */
  cwd: string | undefined;
  tools: readonly string[];
  skills: readonly ResourceEntry[];
  subagents: readonly ResourceEntry[];
}): string {
  const lines = [
    state.cwd === undefined
      ? 'There is no sandbox anymore; the shell and filesystem tools are gone.'
      : `The sandbox changed. Its working directory is now \`${state.cwd}\`.`,
    'Files, directories and command results from the earlier environment may be gone: re-check anything you learned about them before relying on it.',
    '',
    `All available tools: ${state.tools.length > 0 ? state.tools.join(', ') : '(none)'}`,
  ];
  for (const [label, entries] of [
    ['skills', state.skills],
    ['agents', state.subagents],
  ] as const) {
    if (entries.length === 0) lines.push(`All available ${label}: (none)`);
    else lines.push(`All available ${label}:`, ...entries.map(catalogLine));
  }
  return lines.join('\n');
}

const MCP_REASON_MAX = 300;

function mcpReason(reason: string): string {
  return reason.length > MCP_REASON_MAX ? `${reason.slice(0, MCP_REASON_MAX)}…` : reason;
}

/** The `resources` (`resource="mcp"`) body for optional servers that failed this submission. */
export function mcpUnavailableBody(failures: readonly { name: string; reason: string }[]): string {
  if (failures.length === 1) {
    const [failure] = failures as [{ name: string; reason: string }];
    return `MCP server "${failure.name}" is unavailable for this response: ${mcpReason(failure.reason)}. Its tools are not mounted.`;
  }
  return [
    'These MCP servers are unavailable for this response; their tools are not mounted:',
    ...failures.map((failure) => `- "${failure.name}" — ${mcpReason(failure.reason)}`),
  ].join('\n');
}
