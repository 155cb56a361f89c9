/**
 * The YAML subset SKILL.md frontmatter uses (skills-subagents-mcp.md §1.2): top-level `key: value`
 * pairs whose scalars are all read as strings — plain, single- or double-quoted, `|`/`>` block
 * scalars, folded plain continuation lines — plus one level of nested `key: value` maps
 * (`metadata`). Anything else is reported as a problem rather than guessed at.
 */

export type FrontmatterValue = string | Record<string, string>;

export interface FrontmatterResult {
  /** The parsed keys; undefined when the text has no frontmatter block. */
  data: Record<string, FrontmatterValue> | undefined;
  /** The markdown after the closing `---`. */
  body: string;
  /** Syntax problems, each naming the line. */
  problems: string[];
}

/** Splits `---` frontmatter from the body and parses it. */
export function splitFrontmatter(source: string): FrontmatterResult {
  const text = source.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  const lines = text.split('\n');
  if (lines[0]?.trimEnd() !== '---') return { data: undefined, body: text, problems: [] };
  const close = lines.findIndex((line, i) => i > 0 && (line.trimEnd() === '---' || line.trimEnd() === '...'));
  if (close === -1) {
    return { data: undefined, body: text, problems: ['the frontmatter block opened with "---" is never closed'] };
  }
  const problems: string[] = [];
  const data = parseBlock(lines.slice(1, close), 2, problems);
  return { data, body: lines.slice(close + 1).join('\n'), problems };
}

interface Line {
  text: string;
  indent: number;
  number: number;
}

function parseBlock(raw: string[], firstLineNumber: number, problems: string[]): Record<string, FrontmatterValue> {
  const lines: Line[] = raw.map((text, i) => ({ text, indent: text.length - text.trimStart().length, number: i + firstLineNumber }));
  const data: Record<string, FrontmatterValue> = {};
  let i = 0;
  const blank = (line: Line) => line.text.trim() === '' || line.text.trimStart().startsWith('#');
  while (i < lines.length) {
    const line = lines[i]!;
    if (blank(line)) {
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
    // The indented lines that belong to this key.
    const children: Line[] = [];
    while (i < lines.length && (lines[i]!.indent > 0 || lines[i]!.text.trim() === '')) children.push(lines[i++]!);
    while (children.length > 0 && children[children.length - 1]!.text.trim() === '') children.pop();

    const rest = entry.rest.trim();
    let value: FrontmatterValue | undefined;
    if (/^[|>][-+]?$/.test(rest)) {
      value = blockScalar(rest, children);
    } else if (rest === '' || rest.startsWith('#')) {
      const content = children.filter((c) => !blank(c));
      if (content.length === 0) value = '';
      else if (content.every((c) => splitKey(c.text.trim()) !== undefined)) value = parseMap(content, problems);
      else value = content.map((c) => c.text.trim()).join(' ');
    } else {
      value = scalar(rest, children, line.number, problems);
    }
    if (value === undefined) continue;
    if (Object.hasOwn(data, entry.key)) problems.push(`line ${line.number}: duplicate key "${entry.key}"`);
    data[entry.key] = value;
  }
  return data;
}

function parseMap(lines: Line[], problems: string[]): Record<string, string> {
  const map: Record<string, string> = {};
  const indent = lines[0]!.indent;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const entry = splitKey(line.text.trim())!;
    if (line.indent !== indent) {
      problems.push(`line ${line.number}: nested values must be plain strings`);
      continue;
    }
    const children: Line[] = [];
    while (i + 1 < lines.length && lines[i + 1]!.indent > indent) children.push(lines[++i]!);
    const rest = entry.rest.trim();
    const value = /^[|>][-+]?$/.test(rest) ? blockScalar(rest, children) : scalar(rest, children, line.number, problems);
    if (value !== undefined) map[entry.key] = value;
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
  const plain = /^([^\s#'"\-?:,[\]{}&*!|>%@`][^:]*?)\s*:(?:\s|$)/.exec(text);
  if (!plain) return undefined;
  return { key: plain[1]!, rest: text.slice(plain[0].length) };
}

function scalar(rest: string, children: Line[], lineNumber: number, problems: string[]): string | undefined {
  if (rest.startsWith('"')) {
    const joined = [rest, ...children.map((c) => c.text.trim())].join(' ');
    const match = /^"(?:[^"\\]|\\.)*"/.exec(joined);
    const value = match ? unquoteDouble(match[0]) : undefined;
    if (value === undefined || !/^\s*(#.*)?$/.test(joined.slice(match![0].length))) {
      problems.push(`line ${lineNumber}: malformed double-quoted string`);
      return undefined;
    }
    return value;
  }
  if (rest.startsWith("'")) {
    const joined = [rest, ...children.map((c) => c.text.trim())].join(' ');
    const match = /^'((?:[^']|'')*)'\s*(#.*)?$/.exec(joined);
    if (!match) {
      problems.push(`line ${lineNumber}: malformed single-quoted string`);
      return undefined;
    }
    return match[1]!.replaceAll("''", "'");
  }
  // Plain scalar: a trailing " #" starts a comment; indented lines fold into it with spaces.
  const parts = [rest, ...children.map((c) => c.text.trim())].map((p) => p.replace(/\s+#.*$/, ''));
  return parts.filter((p) => p !== '').join(' ');
}

function unquoteDouble(quoted: string): string | undefined {
  const escapes: Record<string, string> = { n: '\n', t: '\t', r: '\r', '0': '\0', '"': '"', '\\': '\\', '/': '/', ' ': ' ', b: '\b', f: '\f', e: '\x1b', a: '\x07', v: '\v', N: '\u0085', _: '\u00a0', L: '\u2028', P: '\u2029' };
  let out = '';
  const body = quoted.slice(1, -1);
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
