/**
 * SKILL.md files found at run time (workspace skills): `parseSkillMarkdown()` and its frontmatter
 * reader, small enough for a Worker. Loaded by the first workspace skill found
 * (workspace-context.ts), not at start. `SKILL.md` imports are read by the build with a full YAML
 * parser; this reads the subset skill frontmatter uses and reports everything else as a problem
 * naming the line, never guessing:
 *
 * - top-level `key: value` pairs; every scalar is a string (plain, single- or double-quoted,
 *   `|`/`>` block scalars with `-`/`+` chomping, plain values folded over indented lines);
 * - one level of nested `key: value` maps (`metadata`), block or flow (`{a: b}`, `{}`);
 * - lists of scalars, block (`- Read` lines, indented or not) or flow (`[Read, Write]`).
 *
 * Anchors, aliases, tags, directives, nested collections, plain values containing `": "` and
 * duplicate keys (at either level) are problems, as YAML (or a reader that would misread them)
 * makes them.
 */
import { type FrontmatterReader, type ReadSkillMarkdownOptions, type SkillFields, readSkillMarkdown } from '../../shared/skill-format.ts';
import { SkillDefinitionValidationError } from './errors.ts';

export type ParseSkillMarkdownOptions = ReadSkillMarkdownOptions;

/**
 * Parses a SKILL.md found at run time (workspace skills; `SKILL.md` imports are parsed by the
 * build) with the frontmatter subset reader. Throws `SkillDefinitionValidationError` listing every
 * problem, with issue paths naming the frontmatter key.
 */
export function parseSkillMarkdown(text: string, options: ParseSkillMarkdownOptions = {}): SkillFields {
  const result = readSkillMarkdown(text, readFrontmatterSubset, options);
  if (!result.ok) throw new SkillDefinitionValidationError(result.subject, result.issues);
  return result.fields;
}

export type FrontmatterValue = string | string[] | Record<string, string>;

interface Line {
  text: string;
  indent: number;
  number: number;
}

/** A `FrontmatterReader` (see `readSkillMarkdown`). */
export const readFrontmatterSubset: FrontmatterReader = (yaml, firstLine) => {
  const problems: string[] = [];
  const lines: Line[] = yaml.split('\n').map((text, i) => ({ text, indent: text.length - text.trimStart().length, number: i + firstLine }));
  return { data: parseBlock(lines, problems), problems };
};

const isBlank = (line: Line) => line.text.trim() === '' || line.text.trimStart().startsWith('#');
const isListItem = (text: string) => text === '-' || text.startsWith('- ');

function parseBlock(lines: Line[], problems: string[]): Record<string, FrontmatterValue> {
  const data: Record<string, FrontmatterValue> = {};
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (isBlank(line)) {
      i++;
      continue;
    }
    if (line.indent > 0) {
      problems.push(`line ${line.number}: unexpected indentation`);
      i++;
      continue;
    }
    const entry = splitKey(line.text);
    if (entry === undefined) {
      problems.push(`line ${line.number}: expected "key: value"`);
      i++;
      continue;
    }
    i++;
    const rest = stripComment(entry.rest.trim());
    // The lines that belong to this key: indented ones, or a block list at the key's own indent.
    const children: Line[] = [];
    const belongs = (next: Line) =>
      next.indent > 0 || next.text.trim() === '' || (rest === '' && isListItem(next.text.trim()) && next.indent === 0);
    while (i < lines.length && belongs(lines[i]!)) children.push(lines[i++]!);
    while (children.length > 0 && children[children.length - 1]!.text.trim() === '') children.pop();

    const value = rest === '' ? collection(children, line.number, problems) : scalarOrFlow(rest, children, line.number, problems);
    if (value === undefined) continue;
    if (Object.hasOwn(data, entry.key)) problems.push(duplicateKey(line.number, entry.key));
    data[entry.key] = value;
  }
  return data;
}

/** YAML keys are unique in a map; keeping either value would be a guess. */
const duplicateKey = (lineNumber: number, key: string) => `line ${lineNumber}: duplicate key "${key}"`;

/** The value of a key with nothing after its colon: empty, a block map, a block list or a folded plain scalar. */
function collection(children: Line[], lineNumber: number, problems: string[]): FrontmatterValue | undefined {
  const content = children.filter((c) => !isBlank(c));
  if (content.length === 0) return '';
  const items = content.filter((c) => isListItem(c.text.trim())).length;
  if (items === content.length) return blockList(content, problems);
  if (items > 0) {
    problems.push(`line ${lineNumber}: a list mixes "- " items with other lines`);
    return undefined;
  }
  if (content.every((c) => splitKey(c.text.trim()) !== undefined)) return blockMap(content, problems);
  return plain(
    content.map((c) => c.text.trim()),
    lineNumber,
    problems,
  );
}

function blockList(lines: Line[], problems: string[]): string[] | undefined {
  const indent = lines[0]!.indent;
  const items: string[] = [];
  for (const line of lines) {
    const item = line.text.trim().slice(1).trim();
    if (line.indent !== indent || item.startsWith('-') || splitKey(item) !== undefined || /^[[{]/.test(item)) {
      problems.push(`line ${line.number}: list items must be plain strings`);
      return undefined;
    }
    const value = scalarOrFlow(stripComment(item), [], line.number, problems);
    if (value === undefined) return undefined;
    items.push(value as string);
  }
  return items;
}

function blockMap(lines: Line[], problems: string[]): Record<string, string> | undefined {
  const map: Record<string, string> = {};
  const indent = lines[0]!.indent;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const entry = splitKey(line.text.trim())!;
    const children: Line[] = [];
    while (i + 1 < lines.length && lines[i + 1]!.indent > indent) children.push(lines[++i]!);
    const rest = stripComment(entry.rest.trim());
    if (line.indent !== indent || rest === '' || /^[[{]/.test(rest)) {
      problems.push(`line ${line.number}: nested values must be plain strings`);
      continue;
    }
    const value = scalarOrFlow(rest, children, line.number, problems);
    if (value === undefined) continue;
    if (Object.hasOwn(map, entry.key)) problems.push(duplicateKey(line.number, entry.key));
    map[entry.key] = value as string;
  }
  return map;
}

/** `key: rest` with a plain or quoted key; undefined when the line is not a mapping entry. */
function splitKey(text: string): { key: string; rest: string } | undefined {
  const quoted = /^("(?:[^"\\]|\\.)*"|'(?:[^']|'')*')\s*:(?:\s|$)/.exec(text);
  if (quoted) {
    const key = quoted[1]!.startsWith('"') ? unquoteDouble(quoted[1]!) : quoted[1]!.slice(1, -1).replaceAll("''", "'");
    return key === undefined ? undefined : { key, rest: text.slice(quoted[0].length) };
  }
  const plainKey = /^([^\s#'"\-?:,[\]{}&*!|>%@`][^:]*?)\s*:(?:\s|$)/.exec(text);
  if (!plainKey) return undefined;
  return { key: plainKey[1]!, rest: text.slice(plainKey[0].length) };
}

/** A trailing ` # comment` outside quotes. */
function stripComment(text: string): string {
  if (text.startsWith('#')) return '';
  if (text.startsWith('"') || text.startsWith("'")) return text;
  return text.replace(/\s+#.*$/, '');
}

/** A value written after the colon: a flow collection, a block scalar header or a scalar. */
function scalarOrFlow(rest: string, children: Line[], lineNumber: number, problems: string[]): FrontmatterValue | undefined {
  const unsupported = (what: string) => {
    problems.push(`line ${lineNumber}: ${what} are not supported in SKILL.md frontmatter; quote the value`);
    return undefined;
  };
  if (/^[&*!%@`]/.test(rest)) return unsupported('anchors, aliases, tags and reserved indicators (& * ! % @ `)');
  if (rest.startsWith('[') || rest.startsWith('{')) {
    const joined = [rest, ...children.map((c) => c.text.trim())].join(' ');
    return flow(joined, lineNumber, problems);
  }
  if (rest.startsWith('|') || rest.startsWith('>')) {
    if (!/^[|>][-+]?$/.test(rest)) return unsupported('block scalar indentation indicators');
    return blockScalar(rest, children);
  }
  if (rest.startsWith('"') || rest.startsWith("'")) return quoted(rest, children, lineNumber, problems);
  if (isListItem(rest)) {
    problems.push(`line ${lineNumber}: a list must start on the line after its key`);
    return undefined;
  }
  return plain([rest, ...children.map((c) => c.text.trim())], lineNumber, problems);
}

/** A plain scalar: a trailing " #" starts a comment; continuation lines fold into it with spaces. */
function plain(parts: string[], lineNumber: number, problems: string[]): string | undefined {
  const text = parts
    .map(stripComment)
    .filter((p) => p !== '')
    .join(' ');
  if (/:\s/.test(text) || text.endsWith(':')) {
    problems.push(`line ${lineNumber}: a plain value must not contain ": "; quote it`);
    return undefined;
  }
  return text;
}

function quoted(rest: string, children: Line[], lineNumber: number, problems: string[]): string | undefined {
  const joined = [rest, ...children.map((c) => c.text.trim())].join(' ');
  if (rest.startsWith('"')) {
    const match = /^"(?:[^"\\]|\\.)*"/.exec(joined);
    const value = match ? unquoteDouble(match[0]) : undefined;
    if (value === undefined || !/^\s*(#.*)?$/.test(joined.slice(match![0].length))) {
      problems.push(`line ${lineNumber}: malformed double-quoted string`);
      return undefined;
    }
    return value;
  }
  const match = /^'((?:[^']|'')*)'\s*(#.*)?$/.exec(joined);
  if (!match) {
    problems.push(`line ${lineNumber}: malformed single-quoted string`);
    return undefined;
  }
  return match[1]!.replaceAll("''", "'");
}

/** `[a, "b"]` or `{k: v}` holding scalars only; nested collections are problems. */
function flow(text: string, lineNumber: number, problems: string[]): string[] | Record<string, string> | undefined {
  const fail = (what: string) => {
    problems.push(`line ${lineNumber}: ${what}`);
    return undefined;
  };
  const open = text[0]!;
  const close = open === '[' ? ']' : '}';
  const end = stripComment(text).trimEnd();
  if (!end.endsWith(close)) return fail(`malformed flow ${open === '[' ? 'list' : 'map'}`);
  const inner = end.slice(1, -1).trim();
  let items: string[] = [];
  let current = '';
  for (let i = 0; i < inner.length; i++) {
    const ch = inner[i]!;
    if (ch === '"' || ch === "'") {
      const match = (ch === '"' ? /^"(?:[^"\\]|\\.)*"/ : /^'(?:[^']|'')*'/).exec(inner.slice(i));
      if (!match) return fail('malformed quoted string in a flow collection');
      current += match[0];
      i += match[0].length - 1;
    } else if (ch === '[' || ch === '{' || ch === ']' || ch === '}') {
      return fail('nested collections are not supported in SKILL.md frontmatter');
    } else if (ch === ',') {
      items.push(current.trim());
      current = '';
    } else current += ch;
  }
  items.push(current.trim());
  if (inner === '') items = [];
  else if (items.at(-1) === '') items.pop(); // a trailing comma
  if (items.some((item) => item === '')) return fail('empty entry in a flow collection');
  const scalar = (item: string) => scalarOrFlow(item, [], lineNumber, problems) as string | undefined;
  if (open === '[') {
    const values = items.map(scalar);
    return values.some((value) => value === undefined) ? undefined : (values as string[]);
  }
  const map: Record<string, string> = {};
  for (const item of items) {
    const entry = splitKey(item);
    if (entry === undefined) return fail('flow map entries must be "key: value"');
    const value = scalar(entry.rest.trim());
    if (value === undefined) return undefined;
    if (Object.hasOwn(map, entry.key)) problems.push(duplicateKey(lineNumber, entry.key));
    map[entry.key] = value;
  }
  return map;
}

function unquoteDouble(quotedText: string): string | undefined {
  const escapes: Record<string, string> = {
    n: '\n',
    t: '\t',
    r: '\r',
    '0': '\0',
    '"': '"',
    '\\': '\\',
    '/': '/',
    ' ': ' ',
    b: '\b',
    f: '\f',
    e: '\x1b',
    a: '\x07',
    v: '\v',
    N: '\u0085',
    _: '\u00a0',
    L: '\u2028',
    P: '\u2029',
  };
  let out = '';
  const body = quotedText.slice(1, -1);
  for (let i = 0; i < body.length; i++) {
    const ch = body[i]!;
    if (ch !== '\\') {
      out += ch;
      continue;
    }
    const next = body[++i];
    if (next === undefined) return undefined;
    const width = next === 'x' ? 2 : next === 'u' ? 4 : next === 'U' ? 8 : 0;
    if (width > 0) {
      const hex = body.slice(i + 1, i + 1 + width);
      if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== width) return undefined;
      out += String.fromCodePoint(parseInt(hex, 16));
      i += width;
    } else if (escapes[next] !== undefined) {
      out += escapes[next];
    } else {
      return undefined;
    }
  }
  return out;
}

function blockScalar(header: string, children: Line[]): string {
  const folded = header.startsWith('>');
  const chomp = header[1];
  const content = children.filter((c) => c.text.trim() !== '');
  const indent = content.length === 0 ? 0 : Math.min(...content.map((c) => c.indent));
  const lines = children.map((c) => (c.text.trim() === '' ? '' : c.text.slice(indent)));
  let text: string;
  if (folded) {
    text = '';
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      const previous = lines[i - 1];
      if (i === 0) text = line;
      else if (line === '') text += '\n';
      else if (previous === '') text += line;
      else if (line.startsWith(' ') || previous!.startsWith(' ')) text += `\n${line}`;
      else text += ` ${line}`;
    }
  } else {
    text = lines.join('\n');
  }
  if (chomp === '-') return text.replace(/\n+$/, '');
  if (chomp === '+') return `${text}\n`;
  return text === '' ? '' : `${text.replace(/\n+$/, '')}\n`;
}
