/**
 * The framework skill tools (skills-subagents-mcp.md §1.4): `activate_skill` (present iff the live
 * skill set is non-empty) and `read_skill_resource` (present iff some live skill has files besides
 * SKILL.md). Both resolve against the live set at call time and take plain-string names.
 */
import * as v from 'valibot';
import type { ToolDefinition } from '../authoring/define-tool.ts';
import { formatRead, MAX_CHARS, MAX_LINES } from '../sandbox/tools.ts';
import type { SkillReference } from './define-skill.ts';
import { PACKAGED_SKILLS_ROOT, packagedFileText, packagedSkillPath, resolvePackagedSkillFile, skillResourcePaths } from './package.ts';

/** The live skills: an array, or a function read at call time. */
export type LiveSkills = readonly SkillReference[] | (() => readonly SkillReference[]);

const live = (skills: LiveSkills): readonly SkillReference[] => (typeof skills === 'function' ? skills() : skills);

export const SKILL_RESOURCES_LINE =
  'This skill has supporting resources, available on demand: read one with read_skill_resource when the instructions call for it.';

/** The miss text for a name not in the live set (a normal result, not an error). */
export function skillMissText(name: string, skills: readonly SkillReference[]): string {
  const names = skills.map((s) => s.name);
  return `Skill "${name}" is not available. Available skills: ${names.length > 0 ? names.join(', ') : '(none)'}.`;
}

/** The `activate_skill` result for a skill. */
export function skillActivationText(skill: SkillReference): string {
  const body = skill.instructions.replace(/^\n+/, '').replace(/\s+$/, '');
  let text = `Run the skill named "${skill.name}".\n\n<skill_instructions>\n${body}\n</skill_instructions>`;
  const resources = skillResourcePaths(skill);
  if (resources.length > 0) {
    const lines = resources.map((path) => `- ${path} → read_skill_resource ${packagedSkillPath(skill, path)}`);
    text += `\n\n${SKILL_RESOURCES_LINE}\n<skill_resources>\n${lines.join('\n')}\n</skill_resources>`;
  }
  return text;
}

const activateInput = v.object({ name: v.string() });

export function activateSkillTool(skills: LiveSkills): ToolDefinition {
  return Object.freeze({
    name: 'activate_skill',
    description:
      'Load the full instructions of a skill listed under "Available Skills". Call it with the skill name ' +
      "before starting work that matches the skill's description, then follow the instructions it returns.",
    input: activateInput,
    parameters: Object.freeze({
      type: 'object',
      properties: { name: { type: 'string', description: 'The name of the skill to activate' } },
      required: ['name'],
    }),
    run(ctx: { data: { name: string } }): string {
      const current = live(skills);
      const name = ctx.data.name.trim();
      const skill = current.find((s) => s.name === name);
      return skill === undefined ? skillMissText(name, current) : skillActivationText(skill);
    },
  }) as unknown as ToolDefinition;
}

const optionalPositiveInt = v.optional(v.pipe(v.number(), v.integer(), v.minValue(1)));
const readInput = v.object({ path: v.string(), offset: optionalPositiveInt, limit: optionalPositiveInt });

/** Whether some skill has files besides SKILL.md (the condition for mounting `read_skill_resource`). */
export function hasSkillResources(skills: readonly SkillReference[]): boolean {
  return skills.some((s) => skillResourcePaths(s).length > 0);
}

/** Reads a packaged skill file as the model sees it; throws the spec's not-found error. */
export function readSkillResource(skills: readonly SkillReference[], path: string, offset?: number, limit?: number): string {
  const found = resolvePackagedSkillFile(skills, path.trim());
  if (found === undefined) throw new Error(`[flue] Packaged skill file not found: ${path}`);
  return formatRead(packagedFileText(found.file), offset, limit);
}

export function readSkillResourceTool(skills: LiveSkills): ToolDefinition {
  return Object.freeze({
    name: 'read_skill_resource',
    description:
      `Read a supporting file of an activated skill, by the ${PACKAGED_SKILLS_ROOT}… path listed in its <skill_resources>. ` +
      `Output is limited to ${MAX_LINES} lines or ${MAX_CHARS / 1024} KB, whichever comes first; ` +
      'use offset (1-based line number) and limit (number of lines) to page through larger files. Binary files are returned as base64.',
    input: readInput,
    parameters: Object.freeze({
      type: 'object',
      properties: {
        path: { type: 'string', description: `The resource path, as listed by activate_skill (${PACKAGED_SKILLS_ROOT}<skill-id>/<file>)` },
        offset: { type: 'integer', minimum: 1, description: 'Line number to start from (1-based)' },
        limit: { type: 'integer', minimum: 1, description: 'Maximum number of lines to read' },
      },
      required: ['path'],
    }),
    run(ctx: { data: { path: string; offset?: number; limit?: number } }): string {
      return readSkillResource(live(skills), ctx.data.path, ctx.data.offset, ctx.data.limit);
    },
  }) as unknown as ToolDefinition;
}
