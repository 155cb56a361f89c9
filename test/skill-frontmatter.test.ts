/**
 * SKILL.md frontmatter read two ways: by the build (the `yaml` package, for `SKILL.md` imports)
 * and by the runtime's subset reader (workspace skills found in a sandbox). For every input both
 * must give the same fields, or both must report a problem: neither may silently misread.
 */
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageSkillDirectory } from '../src/build/plugins.ts';
import { readYamlFrontmatter } from '../src/build/skill-frontmatter.ts';
import { parseSkillMarkdown, readFrontmatterSubset } from '../src/runtime/skills/frontmatter.ts';
import { SkillDefinitionValidationError } from '../src/runtime/skills/errors.ts';
import { readSkillMarkdown } from '../src/shared/skill-format.ts';

const skill = (...frontmatter: string[]) =>
  ['---', 'name: review', 'description: Review a PR.', ...frontmatter, '---', 'Body.', ''].join('\n');

const readers = { build: readYamlFrontmatter, runtime: readFrontmatterSubset };

describe.each(Object.entries(readers))('the %s frontmatter reader', (_, reader) => {
  it('reads an allowed-tools block list as the space-separated tool names', () => {
    const read = readSkillMarkdown(skill('allowed-tools:', '  - Read', '  - Bash(python:*)'), reader);
    expect(read).toMatchObject({ ok: true, fields: { allowedTools: 'Read Bash(python:*)' } });
  });

  it('reads a block list written at the key indentation and a flow list alike', () => {
    for (const lines of [['allowed-tools:', '- Read', '- Bash(python:*)'], ['allowed-tools: [Read, "Bash(python:*)"]']]) {
      expect(readSkillMarkdown(skill(...lines), reader)).toMatchObject({ ok: true, fields: { allowedTools: 'Read Bash(python:*)' } });
    }
  });

  it('reads flow maps, empty values and numbers as strings', () => {
    const read = readSkillMarkdown(skill('metadata: {version: 1.0, "owner": team-a}', 'license:'), reader);
    expect(read).toMatchObject({ ok: true, fields: { metadata: { version: '1.0', owner: 'team-a' }, license: '' } });
    expect(readSkillMarkdown(skill('metadata: {}'), reader)).toMatchObject({ ok: true, fields: { metadata: {} } });
  });

  it.each([
    ['a list where a string belongs', ['license:', '  - MIT'], 'license'],
    ['a list of lists', ['allowed-tools:', '  - - Read'], undefined],
    ['a map in a list', ['allowed-tools:', '  - tool: Read'], undefined],
    ['a nested map', ['metadata:', '  a:', '    b: c'], undefined],
    ['an alias', ['license: &x MIT', 'compatibility: *x'], undefined],
    ['a tag', ['license: !!str MIT'], undefined],
    ['a plain value containing ": "', ['license: see: LICENSE'], undefined],
    ['an unclosed flow list', ['allowed-tools: [Read, Write'], undefined],
  ])('reports %s instead of misreading it', (_, lines, field) => {
    const read = readSkillMarkdown(skill(...lines), reader);
    if (read.ok) {
      // A reader may resolve an alias or tag as YAML does; it must then give YAML's value.
      expect(read.fields).toMatchObject({ license: 'MIT' });
      return;
    }
    expect(read.issues.length).toBeGreaterThan(0);
    if (field !== undefined) expect(read.issues.map((issue) => issue.path?.[0])).toContain(field);
    // Each problem names the line it is on or the field it is about.
    for (const issue of read.issues) expect(issue.path !== undefined || /line \d+/.test(issue.message)).toBe(true);
  });
});

describe.each(Object.entries(readers))('a duplicate key, read by the %s reader', (_, reader) => {
  // YAML keys are unique: keeping the first or the last value would be a guess, so both readers
  // report the key and its line, and the file is named by the caller's subject.
  it.each([
    ['a field', ['license: MIT', 'license: ISC'], 5, 'license'],
    ['a field, once quoted', ['"license": MIT', 'license: ISC'], 5, 'license'],
    ['an ignored key', ['x-note: a', 'x-note: b'], 5, 'x-note'],
    ['a block metadata key', ['metadata:', '  owner: a', '  owner: b'], 6, 'owner'],
    ['a flow metadata key', ["metadata: {owner: a, 'owner': b}"], 4, 'owner'],
  ])('in %s is an error naming the key and the file', (_, lines, line, key) => {
    expect(readSkillMarkdown(skill(...(lines as string[])), reader, { source: 'skills/review/SKILL.md' })).toEqual({
      ok: false,
      subject: '"review" (skills/review/SKILL.md)',
      issues: [{ message: `frontmatter line ${line}: duplicate key "${key}"` }],
    });
  });
});

describe('the build and the runtime agree', () => {
  const inputs = [
    skill('license: |', '  line 1', '  line 2', 'compatibility: >-', '  Needs git', '  and gh.'),
    skill('metadata:', '  version: 1.0', '  \'owner\': "team-a"  # comment', 'allowed-tools: Bash(git:*) Read'),
    skill('allowed-tools:', '  - Read  # the reader', '  - "Bash(git status:*)"', 'unknown: [1, 2]'),
    skill('description-extra: first', '  second'),
  ];
  it.each(inputs.map((text, i) => [i, text]))('input %i', (_, text) => {
    const build = readSkillMarkdown(text as string, readYamlFrontmatter);
    expect(build.ok).toBe(true);
    expect(readSkillMarkdown(text as string, readFrontmatterSubset)).toEqual(build);
  });
});

describe('SKILL.md with an allowed-tools block list', () => {
  const text = skill('allowed-tools:', '  - Read', '  - Bash(python:*)');

  it('is packaged by the build with the tools read as a list', async () => {
    const dir = path.join(mkdtempSync(path.join(tmpdir(), 'flue-skill-')), 'review');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'SKILL.md'), text);
    const { reference } = await packageSkillDirectory(dir);
    expect(reference.allowedTools).toBe('Read Bash(python:*)');
  });

  it('is read at run time with the tools read as a list', () => {
    expect(parseSkillMarkdown(text).allowedTools).toBe('Read Bash(python:*)');
  });

  it('a duplicate key fails the build and the runtime read alike, naming the key and the file', async () => {
    const dir = path.join(mkdtempSync(path.join(tmpdir(), 'flue-skill-')), 'review');
    mkdirSync(dir);
    const file = path.join(dir, 'SKILL.md');
    writeFileSync(file, skill('license: MIT', 'license: ISC'));
    const message = `Invalid skill definition "review" (${file}): frontmatter line 5: duplicate key "license".`;
    await expect(packageSkillDirectory(dir)).rejects.toThrow(message);
    expect(() => parseSkillMarkdown(skill('license: MIT', 'license: ISC'), { source: file })).toThrow(message);
  });

  it('fails the build, naming the field, when a list item is not a string', async () => {
    const dir = path.join(mkdtempSync(path.join(tmpdir(), 'flue-skill-')), 'review');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'SKILL.md'), skill('allowed-tools:', '  - Read', '  - {tool: Bash}'));
    await expect(packageSkillDirectory(dir)).rejects.toThrow(/`allowed-tools` must be a string \(at allowed-tools\)/);
    expect(() => parseSkillMarkdown(skill('allowed-tools:', '  - Read', '  - {tool: Bash}'))).toThrow(SkillDefinitionValidationError);
  });
});
