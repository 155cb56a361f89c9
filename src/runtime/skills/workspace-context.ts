/**
 * Workspace context: what an agent with a sandbox discovers
 * in its working directory — `AGENTS.md` (or `CLAUDE.md`) for the system prompt, and workspace
 * skills under `.agents/skills/<dir>/SKILL.md` for the skill catalog. Discovery goes through the
 * sandbox's own file verbs, so it works the same for every adapter (the virtual sandbox on
 * Workers, `local()` on Node, remote drivers).
 */
import type { RenderResult } from '../authoring/render.ts';
import type { Sandbox } from '../sandbox/types.ts';
import { createSkillReference, type SkillReference } from '../../shared/skill-format.ts';
import { compareCodeUnits } from '../../shared/values.ts';
import { lazyPart } from '../common/lazy-part.ts';
import { DuplicateSkillError } from './errors.ts';

/** Instruction files read from the working directory, in the order they enter the prompt. */
export const WORKSPACE_INSTRUCTION_FILES = ['AGENTS.md', 'CLAUDE.md'] as const;

/** Where workspace skills live, relative to the working directory. */
export const WORKSPACE_SKILLS_DIR = '.agents/skills';

export const WORKSPACE_INSTRUCTIONS_HEADING = '## Workspace Instructions';

/** frontmatter.ts (`parseSkillMarkdown()`), loaded by the first workspace skill found. */
const skillMarkdownPart = lazyPart('SKILL.md parsing', () => import('./frontmatter.ts'));

export interface WorkspaceContext {
  /** The `## Workspace Instructions` section, when an instruction file was found. */
  readonly instructions?: string;
  readonly skills: readonly SkillReference[];
}

export async function discoverWorkspace(sandbox: Sandbox): Promise<WorkspaceContext> {
  const [instructions, skills] = await Promise.all([instructionSection(sandbox), workspaceSkills(sandbox)]);
  return instructions === undefined ? { skills } : { instructions, skills };
}

async function instructionSection(sandbox: Sandbox): Promise<string | undefined> {
  const found: string[] = [];
  for (const file of WORKSPACE_INSTRUCTION_FILES) {
    const text = await readIfFile(sandbox, file);
    if (text === undefined || text.trim() === '') continue;
    found.push(`Instructions from ${sandbox.resolvePath(file)}:\n\n${text.trim()}`);
  }
  if (found.length === 0) return undefined;
  return [
    WORKSPACE_INSTRUCTIONS_HEADING,
    `Your working directory is ${sandbox.cwd}. Its maintainers left these instructions for agents working in it; follow them.`,
    ...found,
  ].join('\n\n');
}

/**
 * One skill per `.agents/skills/<dir>/SKILL.md`, sorted by directory name. An invalid one is
 * skipped with a warning: a stray file in someone's repository must not take the agent down.
 */
async function workspaceSkills(sandbox: Sandbox): Promise<SkillReference[]> {
  if (!(await isDirectory(sandbox, WORKSPACE_SKILLS_DIR))) return [];
  let entries: string[];
  try {
    entries = [...(await sandbox.readdir(WORKSPACE_SKILLS_DIR))].sort(compareCodeUnits);
  } catch (error) {
    console.warn(
      `[flue] Skipping workspace skills in ${sandbox.resolvePath(WORKSPACE_SKILLS_DIR)}: ${error instanceof Error ? error.message : String(error)}`,
    );
    return [];
  }
  const skills: SkillReference[] = [];
  for (const entry of entries) {
    const directory = `${WORKSPACE_SKILLS_DIR}/${entry}`;
    const source = await readIfFile(sandbox, `${directory}/SKILL.md`);
    if (source === undefined) continue;
    const { parseSkillMarkdown } = await skillMarkdownPart();
    const location = sandbox.resolvePath(directory);
    try {
      const fields = parseSkillMarkdown(source, { source: `${location}/SKILL.md`, directoryName: entry });
      // The skill's other files stay in the sandbox; its instructions say where to find them.
      const instructions = `${fields.instructions.replace(/\s+$/, '')}\n\n(This skill's files are in ${location}; relative paths in these instructions resolve there.)`;
      skills.push(createSkillReference({ ...fields, instructions }, { 'SKILL.md': source }));
    } catch (error) {
      console.warn(`[flue] Skipping workspace skill ${location}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return skills;
}

/**
 * The render as the model sees it with workspace context: the instructions section after the
 * agent's own instructions, workspace skills after the declared ones. A workspace skill named
 * like a declared skill is a `DuplicateSkillError`, as two declared skills of one name are.
 */
export function withWorkspaceContext(rendered: RenderResult, context: WorkspaceContext): RenderResult {
  if (context.instructions === undefined && context.skills.length === 0) return rendered;
  for (const skill of context.skills) {
    if (rendered.skills.some((declared) => declared.name === skill.name)) throw new DuplicateSkillError(skill.name);
  }
  const instructions =
    context.instructions === undefined
      ? rendered.instructions
      : rendered.instructions === undefined
        ? context.instructions
        : `${rendered.instructions}\n\n${context.instructions}`;
  return { ...rendered, instructions, skills: [...rendered.skills, ...context.skills] };
}

async function readIfFile(sandbox: Sandbox, path: string): Promise<string | undefined> {
  if (!(await sandbox.exists(path))) return undefined;
  try {
    if (!(await sandbox.stat(path)).isFile) return undefined;
    return await sandbox.readFile(path);
  } catch {
    return undefined;
  }
}

async function isDirectory(sandbox: Sandbox, path: string): Promise<boolean> {
  if (!(await sandbox.exists(path))) return false;
  try {
    return (await sandbox.stat(path)).isDirectory;
  } catch {
    return false;
  }
}
