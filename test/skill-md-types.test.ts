/**
 * The ambient types for Markdown imports (`@flue/runtime/skill-md`, types/skill-md.d.ts), checked
 * the way a user project sees them: a scratch project with `@flue/runtime` in its node_modules,
 * type-checked by tsc. `SKILL.md` imports are `SkillReference`s, other `.md` imports are text,
 * through tsconfig `types` or a triple-slash directive; without either, the imports do not compile.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, test } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tsc = path.join(root, 'node_modules/typescript/bin/tsc');
let project: string;

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
  const result = spawnSync(process.execPath, [tsc, '-p', config], { cwd: project, encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

beforeAll(() => {
  project = mkdtempSync(path.join(tmpdir(), 'flue-skill-md-types-'));
  mkdirSync(path.join(project, 'node_modules/@flue'), { recursive: true });
  symlinkSync(root, path.join(project, 'node_modules/@flue/runtime'), 'dir');
  mkdirSync(path.join(project, 'skills/review'), { recursive: true });
  writeFileSync(path.join(project, 'skills/review/SKILL.md'), '---\nname: review\ndescription: Review a pull request.\n---\n\nRead the diff.\n');
  writeFileSync(path.join(project, 'prompt.md'), 'You review pull requests.\n');
  writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  writeFileSync(path.join(project, 'agent.ts'), AGENT);
  writeFileSync(path.join(project, 'referenced.ts'), REFERENCED);
  tsconfig('tsconfig.types.json', 'agent.ts', ['@flue/runtime/skill-md']);
  tsconfig('tsconfig.reference.json', 'referenced.ts', []);
  tsconfig('tsconfig.without.json', 'agent.ts', []);
});

afterAll(() => rmSync(project, { recursive: true, force: true }));

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
