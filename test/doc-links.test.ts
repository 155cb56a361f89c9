/**
 * Every relative link in the user and contributor documents (README.md, CONTRIBUTING.md,
 * bench/README.md, docs/*.md) points at a file of the repository, and every `#anchor` at a heading
 * of its target, named the way GitHub names heading anchors. Moving a section between documents
 * is then safe: a link left behind fails here. The README also keeps its size and its first commands.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';

const root = path.join(import.meta.dirname, '..');

const DOCUMENTS = [
  'README.md',
  'CONTRIBUTING.md',
  'bench/README.md',
  ...readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
export function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The text with fenced blocks and inline code blanked, so `#` comments and `](x)` in code do not count. */
function withoutCode(text: string): string {
  let fence: string | undefined;
  const kept = text.split('\n').map((line) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === undefined && marker !== undefined) fence = marker;
    else if (fence !== undefined && marker !== undefined && line.trim() === marker) return ((fence = undefined), '');
    return fence === undefined ? line : '';
  });
  return kept.join('\n').replace(/`[^`\n]*`/g, '');
}

function anchors(file: string): Set<string> {
  const text = withoutCode(readFileSync(file, 'utf8'));
  return new Set([...text.matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)].map((m) => anchorOf(m[1]!)));
}

export function brokenLinks(doc: string, text: string): string[] {
  const problems: string[] = [];
  for (const m of withoutCode(text).matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = m[1]!;
    if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
    const [file, anchor] = target.split('#') as [string, string | undefined];
    const resolved = file === '' ? path.join(root, doc) : path.resolve(path.dirname(path.join(root, doc)), file);
    if (!existsSync(resolved)) {
      problems.push(`${doc}: ${target} — no such file`);
      continue;
    }
    if (anchor !== undefined && !(statSync(resolved).isFile() && anchors(resolved).has(anchor))) {
      problems.push(`${doc}: ${target} — no heading with that anchor`);
    }
  }
  return problems;
}

test('GitHub heading anchors', () => {
  expect(anchorOf('Workers AI models (no provider key)')).toBe('workers-ai-models-no-provider-key');
  expect(anchorOf("Testing your agent's crash safety")).toBe('testing-your-agents-crash-safety');
  expect(anchorOf('3. Custom providers: pi-ai 1.6.0')).toBe('3-custom-providers-pi-ai-160');
});

test('a link to a missing file or heading is reported', () => {
  expect(brokenLinks('docs/x.md', '[a](nowhere.md) [b](node.md#no-such-heading) [c](node.md#node-server)')).toEqual([
    'docs/x.md: nowhere.md — no such file',
    'docs/x.md: node.md#no-such-heading — no heading with that anchor',
  ]);
});

test('every relative link in the documents resolves', () => {
  const problems = DOCUMENTS.flatMap((doc) => brokenLinks(doc, readFileSync(path.join(root, doc), 'utf8')));
  expect(problems, problems.join('\n')).toEqual([]);
});

test('the README stays a front door: at most 20 KB, the two set-up commands first', () => {
  const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
  expect(Buffer.byteLength(readme)).toBeLessThanOrEqual(20 * 1024);
  const firstBlock = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
  expect(
    firstBlock
      .trim()
      .split('\n')
      .map((line) => line.split('#')[0]!.trim()),
  ).toEqual(['npm install && npm run dev', 'npm test']);
});
