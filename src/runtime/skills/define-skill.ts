/**
 * `defineSkill()`, the `SkillDefinition`/`SkillReference` shapes and `SKILL.md` parsing
 * (skills-subagents-mcp.md §1.1–§1.2). Definitions are validated and frozen here; packaging (the
 * shape both `defineSkill` and `SKILL.md` imports normalize to) lives in `package.ts`.
 */
import * as v from 'valibot';
import type { ValidationIssue } from '../errors.ts';
import { SkillDefinitionValidationError } from './errors.ts';
import { splitFrontmatter } from './frontmatter.ts';
import type { FrontmatterValue } from './frontmatter.ts';

export interface SkillDefinition {
  readonly name: string;
  readonly description: string;
  readonly instructions: string;
  readonly license?: string;
  readonly compatibility?: string;
  readonly metadata?: Readonly<Record<string, string>>;
  readonly allowedTools?: string;
  readonly files?: Readonly<Record<string, string | Uint8Array>>;
}

/** One packaged file: `content` is the text for `kind: 'text'`, base64 for `kind: 'binary'`. */
export interface PackagedSkillFile {
  readonly kind: 'text' | 'binary';
  readonly content: string;
}

/**
 * A packaged skill: what `import skill from './skills/x/SKILL.md'` produces, and what a
 * `SkillDefinition` is packaged into on first need. `files` is the whole skill directory keyed by
 * `/`-separated relative path, `SKILL.md` included; `instructions` is the SKILL.md body.
 */
export interface SkillReference {
  readonly __flueSkillReference: true;
  /** `skill:<name>:<16 hex>`, a digest of every packaged file (deterministic). */
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly instructions: string;
  readonly license?: string;
  readonly compatibility?: string;
  readonly metadata?: Readonly<Record<string, string>>;
  readonly allowedTools?: string;
  readonly files: Readonly<Record<string, PackagedSkillFile>>;
}

/** The catalog-relevant fields a SKILL.md frontmatter and a definition share. */
export type SkillFields = Omit<SkillDefinition, 'files'>;

// ── Rules ─────────────────────────────────────────────────────────────────────────────────────

export const SKILL_NAME_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
export const SKILL_NAME_MAX = 64;
export const SKILL_DESCRIPTION_MAX = 1024;
export const SKILL_COMPATIBILITY_MAX = 500;

const codePoints = (s: string): number => [...s].length;
const nonBlank = (s: string): boolean => s.trim() !== '';

/** Why `path` is not a safe relative skill file path, or undefined when it is. */
export function unsafeSkillPath(path: string): string | undefined {
  if (path === '') return 'file paths must not be empty';
  if (path === 'SKILL.md') return '"SKILL.md" is the skill itself; put its content in `instructions`';
  if (path.startsWith('/')) return `file path "${path}" must be relative (no leading "/")`;
  if (path.endsWith('/')) return `file path "${path}" must name a file (no trailing "/")`;
  if (path.includes('\\')) return `file path "${path}" must use "/" separators (no "\\")`;
  if (path.includes('\0')) return `file path "${path}" must not contain NUL`;
  if (path.split('/').some((segment) => segment === '' || segment === '.' || segment === '..')) {
    return `file path "${path}" must not contain empty, "." or ".." segments`;
  }
  return undefined;
}

const nameSchema = v.pipe(
  v.string('`name` is required and must be a string'),
  v.check(nonBlank, '`name` is required and must not be empty'),
  v.check((s) => s.length <= SKILL_NAME_MAX, `\`name\` must be at most ${SKILL_NAME_MAX} characters`),
  v.check(
    (s) => SKILL_NAME_PATTERN.test(s),
    '`name` may only contain lowercase ASCII letters, digits and single hyphens, and must not start or end with a hyphen',
  ),
);
const descriptionSchema = v.pipe(
  v.string('`description` is required and must be a string'),
  v.check(nonBlank, '`description` is required and must not be empty'),
  v.check((s) => codePoints(s) <= SKILL_DESCRIPTION_MAX, `\`description\` must be at most ${SKILL_DESCRIPTION_MAX} characters`),
);
const optionalString = (field: string) => v.optional(v.string(`\`${field}\` must be a string`));
const compatibilitySchema = v.optional(
  v.pipe(
    v.string('`compatibility` must be a string'),
    v.check((s) => codePoints(s) <= SKILL_COMPATIBILITY_MAX, `\`compatibility\` must be at most ${SKILL_COMPATIBILITY_MAX} characters`),
  ),
);
const metadataSchema = v.optional(
  v.record(v.string(), v.string('`metadata` values must be strings'), '`metadata` must be an object of strings'),
);

const fieldEntries = {
  name: nameSchema,
  description: descriptionSchema,
  license: optionalString('license'),
  compatibility: compatibilitySchema,
  metadata: metadataSchema,
  allowedTools: optionalString('allowedTools'),
};

const definitionSchema = v.object(
  {
    ...fieldEntries,
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

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

export function toIssues(issues: readonly v.BaseIssue<unknown>[]): ValidationIssue[] {
  return issues.map((issue) => {
    const path = issue.path?.map((item) => item.key as PropertyKey);
    return path && path.length > 0 ? { message: issue.message, path } : { message: issue.message };
  });
}

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

// ── SKILL.md ──────────────────────────────────────────────────────────────────────────────────

export interface ParseSkillMarkdownOptions {
  /** The skill directory's name; the frontmatter `name` must equal it. */
  directoryName?: string;
  /** Named in the error message (e.g. the file path). */
  source?: string;
}

const FRONTMATTER_KEYS: Record<string, keyof typeof fieldEntries> = {
  name: 'name',
  description: 'description',
  license: 'license',
  compatibility: 'compatibility',
  metadata: 'metadata',
  'allowed-tools': 'allowedTools',
};

/**
 * Parses a SKILL.md: YAML frontmatter (scalars read as strings; unknown keys ignored) plus the
 * markdown body, which becomes `instructions`. Throws `SkillDefinitionValidationError` listing
 * every problem, with issue paths naming the frontmatter key.
 */
export function parseSkillMarkdown(text: string, options: ParseSkillMarkdownOptions = {}): SkillFields {
  const subject = options.source ?? 'SKILL.md';
  const { data, body, problems } = splitFrontmatter(text);
  if (data === undefined) {
    const message = problems[0] ?? 'SKILL.md must start with a YAML frontmatter block ("---" … "---") declaring name and description';
    throw new SkillDefinitionValidationError(`(${subject})`, [{ message }]);
  }
  const issues: ValidationIssue[] = problems.map((message) => ({ message: `frontmatter ${message}` }));
  const fields: Record<string, FrontmatterValue | undefined> = { name: undefined, description: undefined };
  const keyOf = new Map<string, string>();
  for (const [yamlKey, field] of Object.entries(FRONTMATTER_KEYS)) {
    if (data[yamlKey] !== undefined) {
      fields[field] = data[yamlKey]!;
      keyOf.set(field, yamlKey);
    }
  }
  const schema = v.object(fieldEntries);
  const result = v.safeParse(schema, fields, { abortPipeEarly: true });
  if (!result.success) {
    for (const issue of toIssues(result.issues)) {
      const [first, ...rest] = issue.path ?? [];
      const yamlKey = typeof first === 'string' ? (keyOf.get(first) ?? (first === 'allowedTools' ? 'allowed-tools' : first)) : first;
      const message = issue.message.replace(/`allowedTools`/g, '`allowed-tools`');
      issues.push(yamlKey === undefined ? { message } : { message, path: [yamlKey, ...rest] });
    }
  }
  if (
    options.directoryName !== undefined &&
    typeof fields.name === 'string' &&
    fields.name !== options.directoryName
  ) {
    issues.push({
      message: `\`name\` "${fields.name}" must equal the skill's directory name "${options.directoryName}"`,
      path: ['name'],
    });
  }
  if (issues.length > 0) {
    const name = typeof fields.name === 'string' && fields.name !== '' ? `"${fields.name}" ` : '';
    throw new SkillDefinitionValidationError(`${name}(${subject})`, issues);
  }
  const out: Record<string, unknown> = {};
  for (const key of ['name', 'description', 'license', 'compatibility', 'allowedTools'] as const) {
    if (fields[key] !== undefined) out[key] = fields[key];
  }
  if (fields.metadata !== undefined) out.metadata = Object.freeze({ ...(fields.metadata as Record<string, string>) });
  out.instructions = body.replace(/^\n+/, '');
  return Object.freeze(out) as unknown as SkillFields;
}
