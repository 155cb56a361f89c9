/**
 * The declarations `npm pack` publishes (scripts/build-types.mjs): every entry's `.d.ts` files
 * type-check with `skipLibCheck: false` against the globals of where the entry runs, and none of
 * them loads pi-ai's types or, for the Worker entries, Node's (which clash with the Workers
 * runtime's in a user's project). Their comments cite no document the package does not ship.
 *
 * The ambient types for Markdown imports (`@flue/runtime/skill-md`, types/skill-md.d.ts) are checked
 * the way a user project sees them, over the declarations emitted here (a checkout has no dist/types
 * until it is packed): `SKILL.md` imports are `SkillReference`s, other `.md` imports are text,
 * through tsconfig `types` or a triple-slash directive; without either, the imports do not compile.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildTypes, checkCitations, checkDeclarations } from '../scripts/build-types.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
// Inside the checkout, so the check's tsc finds node_modules (the folder is gitignored).
mkdirSync(path.join(root, '.tmp-tests'), { recursive: true });
const scratch = mkdtempSync(path.join(root, '.tmp-tests', 'declarations-'));

const emitted = path.join(scratch, 'emitted');
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const WORKERS = { name: 'Workers', lib: ['ES2023'], types: ['@cloudflare/workers-types'] };

test('the emitted declarations pass the check: Worker entries against Workers globals alone, no pi-ai types anywhere', () => {
  // buildTypes runs checkDeclarations on what it emitted and throws on any problem.
  expect(() => buildTypes(emitted)).not.toThrow();
}, 180_000);

test('the check fails an entry whose declarations import pi-ai', () => {
  const dir = path.join(scratch, 'pi-ai');
  mkdirSync(path.join(dir, 'runtime'), { recursive: true });
  writeFileSync(
    path.join(dir, 'runtime', 'index.d.ts'),
    "import type { Message } from '@earendil-works/pi-ai';\nexport type M = Message;\n",
  );
  expect(() => checkDeclarations(dir, [{ ...WORKERS, entries: ['.'] }])).toThrow(/load pi-ai's types/);
}, 120_000);

test('the check fails a Worker entry whose declarations import a node: module', () => {
  const dir = path.join(scratch, 'node-import');
  mkdirSync(path.join(dir, 'runtime'), { recursive: true });
  writeFileSync(path.join(dir, 'runtime', 'index.d.ts'), "import type { Server } from 'node:http';\nexport type S = Server;\n");
  expect(() => checkDeclarations(dir, [{ ...WORKERS, entries: ['.'] }])).toThrow(/'node:http'|load Node's globals/);
}, 120_000);

test('the check fails a published comment that cites a document the package does not ship', () => {
  const dir = path.join(scratch, 'citations');
  mkdirSync(path.join(dir, 'runtime'), { recursive: true });
  const cited = [
    '/** Retried as tools.md §4 says. */',
    '/** See docs/limits.md. */',
    '/** The reply of one settled submission (seed 004). */',
    '/** Frozen (Decision 2). */',
  ];
  for (const line of cited) {
    writeFileSync(path.join(dir, 'runtime', 'index.d.ts'), `${line}\nexport declare const x: number;\n`);
    expect(() => checkCitations(dir), line).toThrow(/runtime\/index\.d\.ts:1 cites/);
  }
  // File formats and public specifications are not citations.
  writeFileSync(
    path.join(dir, 'runtime', 'index.d.ts'),
    '/** A `SKILL.md` import; AGENTS.md is read; RFC 6838 §4.2; runs `seed` once. */\nexport declare const x: number;\n',
  );
  expect(() => checkCitations(dir)).not.toThrow();
});

// Each `@ts-expect-error` marks a usage that must NOT compile: typed `any`, tsc would report the
// directive as unused.
const AGENT = `import { defineSkill, useInstruction, useModel, useSkill, type SkillReference } from '@flue/runtime';
import review from './skills/review/SKILL.md';
import prompt from './prompt.md';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

export const skillIsReference: Equal<typeof review, SkillReference> = true;
export const markdownIsText: Equal<typeof prompt, string> = true;

export function Reviewer() {
  useModel('anthropic/claude-haiku-4-5');
  useSkill(review);
  useInstruction(prompt);
  // @ts-expect-error -- a SKILL.md import is a skill reference, not text
  useInstruction(review);
  // @ts-expect-error -- other .md imports are text, not skills
  useSkill(prompt);
  return \`Review with \${review.name}: \${review.description}\`;
}

export const inline = defineSkill({ name: 'inline', description: 'Inline.', instructions: prompt });
`;

const REFERENCED = `/// <reference types="@flue/runtime/skill-md" />
import type { SkillReference } from '@flue/runtime';
import review from './skills/review/SKILL.md';
import prompt from './prompt.md';

export const skill: SkillReference = review;
export const text: string = prompt;
// @ts-expect-error -- a SKILL.md import is not a string
export const wrong: string = review;
`;

describe('Markdown imports through @flue/runtime/skill-md', () => {
  let project: string;

  beforeAll(() => {
    // The package as npm pack lays it out: its package.json, the declarations emitted above as
    // dist/types, and types/.
    const pkg = path.join(scratch, 'package');
    mkdirSync(path.join(pkg, 'dist'), { recursive: true });
    copyFileSync(path.join(root, 'package.json'), path.join(pkg, 'package.json'));
    symlinkSync(emitted, path.join(pkg, 'dist', 'types'), 'dir');
    mkdirSync(path.join(pkg, 'types'));
    copyFileSync(path.join(root, 'types', 'skill-md.d.ts'), path.join(pkg, 'types', 'skill-md.d.ts'));
    // Its own `@flue/runtime` imports find this package, not the checkout (whose dist/types exists
    // only once it is packed).
    mkdirSync(path.join(pkg, 'node_modules', '@flue'), { recursive: true });
    symlinkSync(pkg, path.join(pkg, 'node_modules', '@flue', 'runtime'), 'dir');
    project = mkdtempSync(path.join(tmpdir(), 'flue-skill-md-types-'));
    mkdirSync(path.join(project, 'node_modules/@flue'), { recursive: true });
    symlinkSync(pkg, path.join(project, 'node_modules/@flue/runtime'), 'dir');
    mkdirSync(path.join(project, 'skills/review'), { recursive: true });
    writeFileSync(
      path.join(project, 'skills/review/SKILL.md'),
      '---\nname: review\ndescription: Review a pull request.\n---\n\nRead the diff.\n',
    );
    writeFileSync(path.join(project, 'prompt.md'), 'You review pull requests.\n');
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    writeFileSync(path.join(project, 'agent.ts'), AGENT);
    writeFileSync(path.join(project, 'referenced.ts'), REFERENCED);
    tsconfig('tsconfig.types.json', 'agent.ts', ['@flue/runtime/skill-md']);
    tsconfig('tsconfig.reference.json', 'referenced.ts', []);
    tsconfig('tsconfig.without.json', 'agent.ts', []);
  });

  afterAll(() => rmSync(project, { recursive: true, force: true }));

  function tsconfig(name: string, include: string, types: string[]): void {
    const compilerOptions = {
      target: 'ES2023',
      module: 'ESNext',
      moduleResolution: 'bundler',
      lib: ['ES2023', 'DOM'],
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      allowImportingTsExtensions: true,
      types,
    };
    writeFileSync(path.join(project, name), JSON.stringify({ compilerOptions, include: [include] }, null, 2));
  }

  function typecheck(config: string): { status: number | null; output: string } {
    const result = spawnSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', config], {
      cwd: project,
      encoding: 'utf8',
    });
    return { status: result.status, output: `${result.stdout}${result.stderr}` };
  }

  test('tsconfig "types": ["@flue/runtime/skill-md"] types SKILL.md imports as SkillReference and .md imports as text', () => {
    const result = typecheck('tsconfig.types.json');
    expect(result.output).toBe('');
    expect(result.status).toBe(0);
  });

  test('a /// <reference types="@flue/runtime/skill-md" /> directive does the same', () => {
    const result = typecheck('tsconfig.reference.json');
    expect(result.output).toBe('');
    expect(result.status).toBe(0);
  });

  test('without the declarations the Markdown imports do not compile', () => {
    const result = typecheck('tsconfig.without.json');
    expect(result.status).not.toBe(0);
    expect(result.output).toContain("Cannot find module './skills/review/SKILL.md'");
  });
});
