/**
 * The system-prompt skill catalog, rendered from the **baseline**
 * skill set; activation never changes it.
 */

export interface SkillCatalogEntry {
  readonly name: string;
  readonly description: string;
}

export const SKILL_CATALOG_HEADING = '## Available Skills';

export const SKILL_CATALOG_INSTRUCTION =
  'Skills are packaged instructions for specific kinds of work. Before starting work that matches ' +
  "a skill's description, call the `activate_skill` tool with that skill's name to load its full " +
  'instructions, then follow them. Only the skills listed here exist; do not guess at others.';

/** `- **<name>** — <description>` (also the catalog line of `resources` signals). */
export function skillCatalogLine(skill: SkillCatalogEntry): string {
  return skill.description === '' ? `- **${skill.name}**` : `- **${skill.name}** — ${skill.description}`;
}

/** The `## Available Skills` section, or undefined when there are no skills. */
export function skillCatalog(skills: readonly SkillCatalogEntry[]): string | undefined {
  if (skills.length === 0) return undefined;
  return [SKILL_CATALOG_HEADING, '', SKILL_CATALOG_INSTRUCTION, '', ...skills.map(skillCatalogLine)].join('\n');
}
