/**
 * The skill format, shared by the build (which packages
 * `SKILL.md` imports) and the runtime (which validates mounts and reads workspace skills): the
 * field rules, the `SKILL.md` layout (a `---` frontmatter block, then the body), how frontmatter
 * keys map to fields, and the packaged `SkillReference` with its deterministic id.
 *
 * Reading the frontmatter's YAML is the caller's part (`FrontmatterReader`): the build uses a full
 * YAML parser; the runtime, which must stay small inside a Worker, a subset reader that reports
 * whatever it does not understand. This module imports nothing from the engine or the build.
 */
import * as v from 'valibot';
import { formatIssues, toIssues, type ValidationIssue } from './issues.ts';
import { decodeText, sha256Hex, toBase64, utf8 } from './skill-bytes.ts';
import { compareCodeUnits } from './values.ts';

/** The catalog-relevant fields a SKILL.md frontmatter and a skill definition share. */
export interface SkillFields {
  readonly name: string;
  readonly description: string;
  readonly instructions: string;
  readonly license?: string;
  readonly compatibility?: string;
  readonly metadata?: Readonly<Record<string, string>>;
  readonly allowedTools?: string;
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
export interface SkillReference extends SkillFields {
  readonly __flueSkillReference: true;
  /** `skill:<name>:<16 hex>`, a digest of every packaged file (deterministic). */
  readonly id: string;
  readonly files: Readonly<Record<string, PackagedSkillFile>>;
}

// ── Field rules ───────────────────────────────────────────────────────────────────────────────

export const SKILL_NAME_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
export const SKILL_NAME_MAX = 64;
export const SKILL_DESCRIPTION_MAX = 1024;
export const SKILL_COMPATIBILITY_MAX = 500;

const codePoints = (s: string): number => [...s].length;
export const nonBlank = (s: string): boolean => s.trim() !== '';

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

/** The schemas of the fields a definition and a frontmatter share (not `instructions`, `files`). */
export const SKILL_FIELD_SCHEMAS = {
  name: nameSchema,
  description: descriptionSchema,
  license: optionalString('license'),
  compatibility: compatibilitySchema,
  metadata: metadataSchema,
  allowedTools: optionalString('allowedTools'),
};

/** The message of every invalid-skill error: build failures and runtime errors read alike. */
export function skillIssuesMessage(subject: string, issues: readonly ValidationIssue[]): string {
  return `Invalid skill definition${subject ? ` ${subject}` : ''}: ${formatIssues(issues)}.`;
}

// ── SKILL.md ──────────────────────────────────────────────────────────────────────────────────

/**
 * Reads the YAML between the `---` lines. `data` is the top-level mapping (undefined when the
 * text is not one); `problems` name the line (`line <n>: …`, counted in the whole file from
 * `firstLine`). A reader reports what it cannot read; it never guesses.
 */
export type FrontmatterReader = (yaml: string, firstLine: number) => { data: Record<string, unknown> | undefined; problems: string[] };

export interface ReadSkillMarkdownOptions {
  /** The skill directory's name; the frontmatter `name` must equal it. */
  directoryName?: string;
  /** Named in the error message (e.g. the file path). */
  source?: string;
}

export type SkillMarkdownResult = { ok: true; fields: SkillFields } | { ok: false; subject: string; issues: ValidationIssue[] };

/** Frontmatter keys → field names; every other key is ignored. */
const FRONTMATTER_KEYS: Record<string, keyof typeof SKILL_FIELD_SCHEMAS> = {
  name: 'name',
  description: 'description',
  license: 'license',
  compatibility: 'compatibility',
  metadata: 'metadata',
  'allowed-tools': 'allowedTools',
};

/** Splits `---` frontmatter from the body: the YAML text and the file line it starts on. */
export function splitFrontmatter(
  source: string,
): { yaml: string; firstLine: number; body: string } | { yaml: undefined; body: string; problem?: string } {
  const text = source.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  const lines = text.split('\n');
  if (lines[0]?.trimEnd() !== '---') return { yaml: undefined, body: text };
  const close = lines.findIndex((line, i) => i > 0 && (line.trimEnd() === '---' || line.trimEnd() === '...'));
  if (close === -1) {
    return { yaml: undefined, body: text, problem: 'the frontmatter block opened with "---" is never closed' };
  }
  return { yaml: lines.slice(1, close).join('\n'), firstLine: 2, body: lines.slice(close + 1).join('\n') };
}

/**
 * Reads a SKILL.md: frontmatter (through `reader`; scalars are strings; unknown keys ignored;
 * `allowed-tools` may be a space-separated string or a list of tool names, which are joined with
 * spaces) plus the markdown body, which becomes `instructions`. Every problem is collected, with
 * issue paths naming the frontmatter key.
 */
export function readSkillMarkdown(text: string, reader: FrontmatterReader, options: ReadSkillMarkdownOptions = {}): SkillMarkdownResult {
  const subject = options.source ?? 'SKILL.md';
  const split = splitFrontmatter(text);
  const read = split.yaml === undefined ? undefined : reader(split.yaml, split.firstLine);
  if (read?.data === undefined) {
    const message =
      (split.yaml === undefined ? split.problem : undefined) ??
      (read?.problems[0] === undefined ? undefined : `frontmatter ${read.problems[0]}`) ??
      'SKILL.md must start with a YAML frontmatter block ("---" … "---") declaring name and description';
    return { ok: false, subject: `(${subject})`, issues: [{ message }] };
  }
  const data = read.data;
  const issues: ValidationIssue[] = read.problems.map((message) => ({ message: `frontmatter ${message}` }));
  const fields: Record<string, unknown> = { name: undefined, description: undefined };
  const keyOf = new Map<string, string>();
  for (const [yamlKey, field] of Object.entries(FRONTMATTER_KEYS)) {
    if (!Object.hasOwn(data, yamlKey) || data[yamlKey] === undefined) continue;
    const value = data[yamlKey];
    fields[field] = field === 'allowedTools' && Array.isArray(value) && value.every((t) => typeof t === 'string') ? value.join(' ') : value;
    keyOf.set(field, yamlKey);
  }
  const result = v.safeParse(v.object(SKILL_FIELD_SCHEMAS), fields, { abortPipeEarly: true });
  if (!result.success) {
    for (const issue of toIssues(result.issues)) {
      const [first, ...rest] = issue.path ?? [];
      const yamlKey = typeof first === 'string' ? (keyOf.get(first) ?? (first === 'allowedTools' ? 'allowed-tools' : first)) : first;
      const message = issue.message.replace(/`allowedTools`/g, '`allowed-tools`');
      issues.push(yamlKey === undefined ? { message } : { message, path: [yamlKey, ...rest] });
    }
  }
  if (options.directoryName !== undefined && typeof fields.name === 'string' && fields.name !== options.directoryName) {
    issues.push({
      message: `\`name\` "${fields.name}" must equal the skill's directory name "${options.directoryName}"`,
      path: ['name'],
    });
  }
  if (issues.length > 0) {
    const name = typeof fields.name === 'string' && fields.name !== '' ? `"${fields.name}" ` : '';
    return { ok: false, subject: `${name}(${subject})`, issues };
  }
  const out: Record<string, unknown> = {};
  for (const key of ['name', 'description', 'license', 'compatibility', 'allowedTools'] as const) {
    if (fields[key] !== undefined) out[key] = fields[key];
  }
  if (fields.metadata !== undefined) out.metadata = Object.freeze({ ...(fields.metadata as Record<string, string>) });
  out.instructions = split.body.replace(/^\n+/, '');
  return { ok: true, fields: Object.freeze(out) as unknown as SkillFields };
}

// ── Packaging ─────────────────────────────────────────────────────────────────────────────────

/**
 * `skill:<name>:<first 16 hex of sha256(…)>` over the files sorted by path, each contributing
 * (u32 BE path byte length, u32 BE content length, path bytes, content bytes).
 */
export function skillPackageId(name: string, files: Readonly<Record<string, Uint8Array>>): string {
  const parts: Uint8Array[] = [];
  let total = 0;
  for (const path of Object.keys(files).sort(compareCodeUnits)) {
    const pathBytes = utf8(path);
    const content = files[path]!;
    const header = new Uint8Array(8);
    const view = new DataView(header.buffer);
    view.setUint32(0, pathBytes.length);
    view.setUint32(4, content.length);
    parts.push(header, pathBytes, content);
    total += 8 + pathBytes.length + content.length;
  }
  const all = new Uint8Array(total);
  let offset = 0;
  for (const part of parts) {
    all.set(part, offset);
    offset += part.length;
  }
  return `skill:${name}:${sha256Hex(all).slice(0, 16)}`;
}

/**
 * Builds a frozen `SkillReference` from parsed fields and the skill directory's files
 * (`SKILL.md` included). Text is kept as text; bytes that are valid UTF-8 become text, others
 * binary (base64).
 */
export function createSkillReference(fields: SkillFields, files: Readonly<Record<string, string | Uint8Array>>): SkillReference {
  const bytes: Record<string, Uint8Array> = {};
  const packaged: Record<string, PackagedSkillFile> = {};
  for (const path of Object.keys(files).sort(compareCodeUnits)) {
    const content = files[path]!;
    if (typeof content === 'string') {
      bytes[path] = utf8(content);
      packaged[path] = Object.freeze({ kind: 'text', content });
    } else {
      bytes[path] = content;
      const text = decodeText(content);
      packaged[path] = Object.freeze(text === undefined ? { kind: 'binary', content: toBase64(content) } : { kind: 'text', content: text });
    }
  }
  const reference: Record<string, unknown> = {
    __flueSkillReference: true,
    id: skillPackageId(fields.name, bytes),
    name: fields.name,
    description: fields.description,
    instructions: fields.instructions,
  };
  for (const key of ['license', 'compatibility', 'allowedTools'] as const) {
    if (fields[key] !== undefined) reference[key] = fields[key];
  }
  if (fields.metadata !== undefined) reference.metadata = Object.freeze({ ...fields.metadata });
  reference.files = Object.freeze(packaged);
  return Object.freeze(reference) as unknown as SkillReference;
}
