/**
 * `defineSkill()` and the `SkillDefinition`/`SkillReference` shapes (skills-subagents-mcp.md
 * §1.1–§1.2). Definitions are validated and frozen here; packaging (the shape both `defineSkill`
 * and `SKILL.md` imports normalize to) lives in `package.ts`, and a `SKILL.md` found at run time is
 * parsed by `frontmatter.ts`.
 */
import * as v from 'valibot';
import { toIssues } from '../../shared/issues.ts';
import { SKILL_FIELD_SCHEMAS, nonBlank, unsafeSkillPath, type SkillFields } from '../../shared/skill-format.ts';
import { isPlainObject } from '../common/values.ts';
import { SkillDefinitionValidationError } from './errors.ts';

export {
  SKILL_COMPATIBILITY_MAX,
  SKILL_DESCRIPTION_MAX,
  SKILL_NAME_MAX,
  SKILL_NAME_PATTERN,
  unsafeSkillPath,
} from '../../shared/skill-format.ts';
export type { PackagedSkillFile, SkillFields, SkillReference } from '../../shared/skill-format.ts';
export { toIssues };

export interface SkillDefinition extends SkillFields {
  readonly files?: Readonly<Record<string, string | Uint8Array>>;
}

const definitionSchema = v.object(
  {
    ...SKILL_FIELD_SCHEMAS,
    instructions: v.pipe(
      v.string('`instructions` is required and must be a string'),
      v.check(nonBlank, '`instructions` is required and must not be empty: a skill is its content'),
    ),
    files: v.optional(
      v.pipe(
        v.custom<Record<string, unknown>>(isPlainObject, '`files` must be an object keyed by relative path'),
        v.rawCheck(({ dataset, addIssue }) => {
          if (!dataset.typed) return;
          for (const [path, content] of Object.entries(dataset.value)) {
            const problem = unsafeSkillPath(path);
            const entry = { type: 'object' as const, origin: 'value' as const, input: dataset.value, key: path, value: content };
            if (problem !== undefined) addIssue({ message: problem, path: [entry] });
            else if (typeof content !== 'string' && !(content instanceof Uint8Array)) {
              addIssue({ message: `file "${path}" must be a string or a Uint8Array`, path: [entry] });
            }
          }
        }),
      ),
    ),
  },
  'a skill definition must be an object',
);

function subjectOf(value: unknown): string {
  const name = (value as { name?: unknown } | null)?.name;
  return typeof name === 'string' && name.trim() !== '' ? `"${name}"` : '';
}

const DEFINITION_KEYS = ['name', 'description', 'instructions', 'license', 'compatibility', 'metadata', 'allowedTools', 'files'];

// Definitions this module produced (re-validating on every render would only copy them again).
const validated = new WeakSet<object>();

export function isValidatedSkillDefinition(value: unknown): value is SkillDefinition {
  return typeof value === 'object' && value !== null && validated.has(value);
}

/**
 * Validates a skill definition and returns a frozen copy holding only the declared keys (files
 * copied; `Uint8Array` contents copied too so later mutation cannot change the skill).
 * Throws `SkillDefinitionValidationError` with every issue found.
 */
export function validateSkillDefinition(value: unknown): SkillDefinition {
  if (isValidatedSkillDefinition(value)) return value;
  // Every key present (missing ones as undefined), so a missing field reports its own message.
  const input =
    typeof value === 'object' && value !== null && !Array.isArray(value)
      ? Object.fromEntries(DEFINITION_KEYS.map((key) => [key, (value as Record<string, unknown>)[key]]))
      : value;
  const result = v.safeParse(definitionSchema, input, { abortPipeEarly: true });
  if (!result.success) throw new SkillDefinitionValidationError(subjectOf(value), toIssues(result.issues));
  const raw = value as Record<string, unknown>;
  const copy: Record<string, unknown> = {};
  for (const key of ['name', 'description', 'instructions', 'license', 'compatibility', 'allowedTools'] as const) {
    if (raw[key] !== undefined) copy[key] = raw[key];
  }
  if (raw.metadata !== undefined) copy.metadata = Object.freeze({ ...(raw.metadata as Record<string, string>) });
  if (raw.files !== undefined) {
    const files: Record<string, string | Uint8Array> = {};
    for (const [path, content] of Object.entries(raw.files as Record<string, string | Uint8Array>)) {
      files[path] = typeof content === 'string' ? content : content.slice();
    }
    copy.files = Object.freeze(files);
  }
  const definition = Object.freeze(copy) as unknown as SkillDefinition;
  validated.add(definition);
  return definition;
}

/** Declares an inline skill: validates and returns a frozen copy. No packaging happens here. */
export function defineSkill(definition: SkillDefinition): SkillDefinition {
  return validateSkillDefinition(definition);
}
