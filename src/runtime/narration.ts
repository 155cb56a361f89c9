/**
 * Dynamic resources (skills-subagents-mcp.md §4): each render's tools, skills and subagents are
 * compared with the last narrated snapshot, and each kind that changed is announced to the model
 * with one `resources` signal at the turn boundary. The first render sets the baseline silently.
 */
import { type ToolDefinition, toolParameters } from './define-tool.ts';
import type { SkillReference } from './skills/define-skill.ts';
import type { SubagentDefinition } from './subagents.ts';

export type ResourceKind = 'tool' | 'skill' | 'subagent';

interface Entry {
  name: string;
  description: string;
  /** What identifies this version of the entry; a change is narrated as an update. */
  digest: string;
}

/** Last narrated state: per kind, name → digest. */
export type ResourceSnapshot = Partial<Record<ResourceKind, Record<string, string>>>;

const NOUN: Record<ResourceKind, [singular: string, plural: string]> = {
  tool: ['tool', 'tools'],
  skill: ['skill', 'skills'],
  subagent: ['agent', 'agents'],
};

export function resourceEntries(render: {
  tools: readonly ToolDefinition[];
  skills: readonly SkillReference[];
  subagents: readonly SubagentDefinition[];
}): Record<ResourceKind, Entry[]> {
  return {
    tool: render.tools.map((tool) => ({ name: tool.name, description: tool.description, digest: JSON.stringify([tool.description, toolParameters(tool)]) })),
    skill: render.skills.map((skill) => ({ name: skill.name, description: skill.description, digest: skill.id })),
    subagent: render.subagents.map((agent) => ({ name: agent.name, description: agent.description, digest: JSON.stringify([agent.description, agent.model ?? null]) })),
  };
}

export function snapshotOf(entries: Record<ResourceKind, Entry[]>): ResourceSnapshot {
  const snapshot: ResourceSnapshot = {};
  for (const kind of Object.keys(entries) as ResourceKind[]) {
    snapshot[kind] = Object.fromEntries(entries[kind].map((entry) => [entry.name, entry.digest] as const).sort(([a], [b]) => (a < b ? -1 : 1)));
  }
  return snapshot;
}

/** The signal bodies for what changed since `previous`, one per kind, in tool/skill/subagent order. */
export function narrate(entries: Record<ResourceKind, Entry[]>, previous: ResourceSnapshot): { kind: ResourceKind; body: string }[] {
  const out: { kind: ResourceKind; body: string }[] = [];
  for (const kind of ['tool', 'skill', 'subagent'] as const) {
    const before = previous[kind] ?? {};
    const now = entries[kind];
    const [one, many] = NOUN[kind];
    const lines: string[] = [];
    const added = now.filter((entry) => before[entry.name] === undefined);
    if (added.length > 0) {
      lines.push(added.length === 1 ? `New ${one} available:` : `New ${many} available:`);
      for (const entry of added) lines.push(entry.description ? `- **${entry.name}** — ${entry.description}` : `- **${entry.name}**`);
    }
    const names = new Set(now.map((entry) => entry.name));
    for (const name of Object.keys(before)) if (!names.has(name)) lines.push(`The ${one} "${name}" is no longer available.`);
    for (const entry of now) {
      const digest = before[entry.name];
      if (digest === undefined || digest === entry.digest) continue;
      lines.push(kind === 'tool' ? `The tool "${entry.name}" was updated.` : `The ${one} "${entry.name}" was updated:\n- **${entry.name}** — ${entry.description}`);
    }
    if (lines.length === 0) continue;
    lines.push(`All available ${many}: ${now.map((entry) => entry.name).join(', ')}`);
    out.push({ kind, body: lines.join('\n') });
  }
  return out;
}
