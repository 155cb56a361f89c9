/**
 * Every design-document reference in the code base resolves. Comments cite the contributor
 * documents by name and section (`streaming-protocol.md §6`, `sandbox.md §3.4/§4`,
 * `tools.md §4–§7`); this test finds each citation under src/, test/, scripts/, bench/,
 * examples/ and templates/ and checks that
 *
 * - `docs/design/<name>.md` exists (or `docs/<name>.md` for the user guides), and
 * - when a section is given, that document has a markdown heading numbered with it
 *   (`## 6.` or `### 6.2`).
 *
 * Bare mentions (`see workflows-and-schedules.md`) count only when the name is a design document:
 * one cited with a section somewhere, one present in docs/design/, or one of KNOWN_DESIGN_DOCS.
 * Other `*.md` names in the code are fixtures (skill files, sample paths) and are ignored.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, test } from 'vitest';

const root = join(import.meta.dirname, '..');
const SCANNED = ['src', 'test', 'scripts', 'bench', 'examples', 'templates'];
// Not the repository's text: installed, built and generated (bench/.results holds copies of earlier revisions).
const SKIPPED_DIRS = new Set(['node_modules', 'dist', '.wrangler', '.git', '.results']);
const TEXT_FILE = /\.(ts|tsx|mts|cts|js|mjs|cjs|json|jsonc|md|txt|toml|html|css|sh|yaml|yml)$/;

/** Design documents a bare mention may name even before anyone cites them with a section. */
const KNOWN_DESIGN_DOCS = [
  'agents-and-hooks',
  'architecture',
  'build-and-cli',
  'cloudflare',
  'delivery',
  'durability',
  'errors',
  'events',
  'models-and-providers',
  'node-target',
  'persistence',
  'sandbox',
  'skills-subagents-mcp',
  'streaming-protocol',
  'toolchain',
  'tools',
  'workflows-and-schedules',
];

interface Reference {
  where: string; // file:line
  name: string;
  sections: string[]; // empty for a bare mention
}

function walk(dir: string, out: string[]): void {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir)) {
    if (SKIPPED_DIRS.has(entry)) continue;
    const path = join(dir, entry);
    const stat = statSync(path);
    if (stat.isDirectory()) walk(path, out);
    else if (TEXT_FILE.test(entry) || entry.startsWith('.')) out.push(path);
  }
}

// `name.md`, not part of a path or a longer word, optionally followed by a section list:
// `§6`, `§3, §6`, `§4–§6, §9`, `§3.4/§4`, `§2–§7 and §11`, `§5.` (sentence end).
const SECTION = String.raw`§\s?\d+(?:\.\d+)*`;
const SEPARATOR = String.raw`\s*(?:,|–|—|-|/|&|\band\b)\s*`;
const REFERENCE = new RegExp(String.raw`(?<![\w./@-])([a-z][a-z0-9-]*)\.md\b((?:\s*${SECTION})(?:${SEPARATOR}${SECTION})*)?`, 'g');

function collect(): Reference[] {
  const files: string[] = [];
  for (const dir of SCANNED) walk(join(root, dir), files);
  const refs: Reference[] = [];
  for (const file of files) {
    if (file === import.meta.filename) continue; // this file's own examples
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      for (const match of line.matchAll(REFERENCE)) {
        const sections = [...(match[2] ?? '').matchAll(/§\s?(\d+(?:\.\d+)*)/g)].map((m) => m[1]!);
        refs.push({ where: `${relative(root, file)}:${i + 1}`, name: match[1]!, sections });
      }
    });
  }
  return refs;
}

/** The section numbers a document's headings carry: `## 6. Title` → 6, `### 6.2 Title` → 6.2. */
function headings(path: string): Set<string> {
  const numbers = new Set<string>();
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const m = /^#{1,6}\s+(\d+(?:\.\d+)*)\.?(?:\s|$)/.exec(line);
    if (m) numbers.add(m[1]!);
  }
  return numbers;
}

function documentFor(name: string): string[] {
  return [join(root, 'docs', 'design', `${name}.md`), join(root, 'docs', `${name}.md`)].filter((p) => existsSync(p));
}

function designDocNames(refs: Reference[]): Set<string> {
  const names = new Set(KNOWN_DESIGN_DOCS);
  for (const r of refs) if (r.sections.length > 0) names.add(r.name);
  const designDir = join(root, 'docs', 'design');
  if (existsSync(designDir)) {
    for (const f of readdirSync(designDir)) if (f.endsWith('.md') && f !== 'README.md') names.add(f.slice(0, -3));
  }
  return names;
}

/** Every unresolved reference as `file:line: name.md §n — why`. */
export function unresolvedReferences(only?: (name: string) => boolean): string[] {
  const refs = collect();
  const design = designDocNames(refs);
  const problems: string[] = [];
  for (const ref of refs) {
    if (!design.has(ref.name)) continue; // a fixture's file name, not a design document
    if (only && !only(ref.name)) continue;
    const cited = `${ref.name}.md${ref.sections.length ? ' ' + ref.sections.map((s) => `§${s}`).join(', ') : ''}`;
    const docs = documentFor(ref.name);
    if (docs.length === 0) {
      problems.push(`${ref.where}: ${cited} — no docs/design/${ref.name}.md (nor docs/${ref.name}.md)`);
      continue;
    }
    const numbered = new Set(docs.flatMap((d) => [...headings(d)]));
    const missing = ref.sections.filter((s) => !numbered.has(s));
    if (missing.length > 0) {
      const shown = docs.map((d) => relative(root, d)).join(' / ');
      problems.push(`${ref.where}: ${cited} — ${shown} has no heading numbered ${missing.map((s) => `§${s}`).join(', ')}`);
    }
  }
  return problems;
}

describe('design-document references', () => {
  test('the scanner finds the citations it is meant to find', () => {
    const refs = collect();
    expect(refs.length).toBeGreaterThan(100);
    const sample = refs.find((r) => r.name === 'streaming-protocol' && r.sections.length > 1);
    expect(sample, 'a multi-section citation such as "streaming-protocol.md §3, §6"').toBeDefined();
  });

  test('every cited document exists and every cited section has a numbered heading', () => {
    const problems = unresolvedReferences();
    expect(problems, `Unresolved design-document references:\n${problems.join('\n')}`).toEqual([]);
  });
});
