/**
 * Packaging (skills-subagents-mcp.md §1.1–§1.3): the one `SkillReference` shape that `SKILL.md`
 * imports (packaged by the build) and `SkillDefinition`s (packaged lazily, cached per definition
 * object) both normalize to, plus the mount validation `useSkill` needs.
 */
import * as v from 'valibot';
import { DuplicateSkillError, SkillDefinitionValidationError } from './errors.ts';
import { fromBase64, utf8 } from '../../shared/skill-bytes.ts';
import { createSkillReference, unsafeSkillPath } from '../../shared/skill-format.ts';
import { compareCodeUnits } from '../../shared/values.ts';
import type { PackagedSkillFile, SkillFields, SkillReference } from '../../shared/skill-format.ts';
import { toIssues, validateSkillDefinition } from './define-skill.ts';
import type { SkillDefinition } from './define-skill.ts';
import { kindOf } from '../common/values.ts';

/** Where packaged skill files are served (a read-only overlay on the sandbox; `read_skill_resource`). */
export const PACKAGED_SKILLS_ROOT = '/.flue/packaged-skills/';

/**
 * The SKILL.md a definition packages to: frontmatter (`name`, `description`, then optional
 * `license`, `compatibility`, `metadata` with sorted keys, `allowed-tools`; values JSON-quoted)
 * followed by `instructions` as the body.
 */
export function synthesizeSkillMarkdown(definition: SkillFields): string {
  const q = (s: string) => JSON.stringify(s);
  const lines = ['---', `name: ${q(definition.name)}`, `description: ${q(definition.description)}`];
  if (definition.license !== undefined) lines.push(`license: ${q(definition.license)}`);
  if (definition.compatibility !== undefined) lines.push(`compatibility: ${q(definition.compatibility)}`);
  if (definition.metadata !== undefined) {
    const keys = Object.keys(definition.metadata).sort(compareCodeUnits);
    if (keys.length === 0) lines.push('metadata: {}');
    else {
      lines.push('metadata:');
      for (const key of keys) lines.push(`  ${q(key)}: ${q(definition.metadata[key]!)}`);
    }
  }
  if (definition.allowedTools !== undefined) lines.push(`allowed-tools: ${q(definition.allowedTools)}`);
  lines.push('---', '');
  return `${lines.join('\n')}${definition.instructions}`;
}

const packages = new WeakMap<SkillDefinition, SkillReference>();

/** Packages a (validated) definition into its `SkillReference`, once per definition object. */
export function packageSkillDefinition(definition: SkillDefinition): SkillReference {
  const valid = validateSkillDefinition(definition);
  let reference = packages.get(valid);
  if (reference === undefined) {
    const { files, ...fields } = valid;
    reference = createSkillReference(fields, { ...files, 'SKILL.md': synthesizeSkillMarkdown(fields) });
    packages.set(valid, reference);
  }
  return reference;
}

export function isSkillReference(value: unknown): value is SkillReference {
  return typeof value === 'object' && value !== null && (value as { __flueSkillReference?: unknown }).__flueSkillReference === true;
}

const fileSchema = v.object({ kind: v.picklist(['text', 'binary']), content: v.string() });
const referenceSchema = v.object({
  __flueSkillReference: v.literal(true),
  id: v.pipe(v.string(), v.regex(/^skill:[a-z0-9-]+:[0-9a-f]+$/, 'a skill reference `id` must look like skill:<name>:<hex>')),
  name: v.string(),
  description: v.string(),
  instructions: v.string(),
  files: v.pipe(
    v.record(v.string(), fileSchema),
    v.check(
      (files) => Object.keys(files).every((p) => p === 'SKILL.md' || unsafeSkillPath(p) === undefined),
      'a skill reference has an unsafe file path',
    ),
  ),
});
const checkedReferences = new WeakSet<object>();

/**
 * What `useSkill(value)` mounts: a `SkillReference` (from a SKILL.md import) is checked for shape
 * and returned as is; any other object is validated as a `SkillDefinition` and packaged. Throws
 * `SkillDefinitionValidationError` for anything else.
 */
export function validateSkillMount(value: unknown): SkillReference {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SkillDefinitionValidationError('', [
      { message: `useSkill() takes a SKILL.md import or a skill definition object, received ${kindOf(value)}` },
    ]);
  }
  if (isSkillReference(value)) {
    if (checkedReferences.has(value)) return value;
    const result = v.safeParse(referenceSchema, value);
    if (!result.success) {
      const name = typeof (value as { name?: unknown }).name === 'string' ? `"${(value as { name: string }).name}" ` : '';
      throw new SkillDefinitionValidationError(`${name}(malformed SKILL.md import)`, toIssues(result.issues));
    }
    checkedReferences.add(value);
    return value;
  }
  return packageSkillDefinition(value as SkillDefinition);
}

/** Validates a render's mounts in order; throws `DuplicateSkillError` on a repeated name. */
export function collectSkills(values: readonly unknown[]): SkillReference[] {
  const seen = new Set<string>();
  const skills: SkillReference[] = [];
  for (const value of values) {
    const skill = validateSkillMount(value);
    if (seen.has(skill.name)) throw new DuplicateSkillError(skill.name);
    seen.add(skill.name);
    skills.push(skill);
  }
  return skills;
}

/** The advertised path of one packaged file. */
export function packagedSkillPath(skill: SkillReference, path: string): string {
  return `${PACKAGED_SKILLS_ROOT}${encodeURIComponent(skill.id)}/${path}`;
}

/** The files a skill advertises as resources: everything but SKILL.md, sorted. */
export function skillResourcePaths(skill: SkillReference): string[] {
  return Object.keys(skill.files)
    .filter((p) => p !== 'SKILL.md')
    .sort(compareCodeUnits);
}

/**
 * Resolves a `/.flue/packaged-skills/<id>/<path>` path (id percent-encoded or not) against
 * `skills`; undefined when it names no packaged file.
 */
export function resolvePackagedSkillFile(
  skills: Iterable<SkillReference>,
  requested: string,
): { skill: SkillReference; path: string; file: PackagedSkillFile } | undefined {
  const normalized = requested.startsWith('/') ? requested : `/${requested}`;
  if (!normalized.startsWith(PACKAGED_SKILLS_ROOT)) return undefined;
  const rest = normalized.slice(PACKAGED_SKILLS_ROOT.length);
  const slash = rest.indexOf('/');
  if (slash <= 0) return undefined;
  let id: string;
  try {
    id = decodeURIComponent(rest.slice(0, slash));
  } catch {
    return undefined;
  }
  const path = rest.slice(slash + 1);
  for (const skill of skills) {
    if (skill.id !== id) continue;
    const file = Object.hasOwn(skill.files, path) ? skill.files[path] : undefined;
    return file === undefined ? undefined : { skill, path, file };
  }
  return undefined;
}

/** A packaged file as model-readable text: binary as base64 wrapped at 76 characters a line. */
export function packagedFileText(file: PackagedSkillFile): string {
  if (file.kind === 'text') return file.content;
  return file.content.match(/.{1,76}/g)?.join('\n') ?? '';
}

/** The raw bytes of a packaged file. */
export function packagedFileBytes(file: PackagedSkillFile): Uint8Array {
  return file.kind === 'text' ? utf8(file.content) : fromBase64(file.content);
}
