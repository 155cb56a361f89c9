import { describe, expect, it } from 'vitest';
import { FlueError } from '../common/errors.ts';
import type { ValidationIssue } from '../common/errors.ts';
import { defineSkill, validateSkillDefinition } from './define-skill.ts';
import { parseSkillMarkdown } from './frontmatter.ts';
import type { SkillDefinition } from './define-skill.ts';
import { SkillDefinitionValidationError } from './errors.ts';

const base = { name: 'review', description: 'Review a pull request.', instructions: '# Review\n\nRead the diff.' };

function issuesOf(fn: () => unknown): ValidationIssue[] {
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(SkillDefinitionValidationError);
  expect(thrown).toBeInstanceOf(FlueError);
  const error = thrown as SkillDefinitionValidationError;
  expect(error.type).toBe('skill_definition_validation');
  expect(error.name).toBe('SkillDefinitionValidationError');
  return error.meta.issues;
}

const define = (value: Record<string, unknown>) => defineSkill(value as unknown as SkillDefinition);
const paths = (issues: ValidationIssue[]) => issues.map((i) => (i.path ?? []).map(String).join('.'));

describe('defineSkill', () => {
  it('returns a frozen copy with only declared keys', () => {
    const files = { 'ref/a.md': 'A', 'bin/x': new Uint8Array([1, 2]) };
    const skill = define({ ...base, license: 'MIT', metadata: { team: 'core' }, allowedTools: 'read bash', files, extra: 1 });
    expect(Object.isFrozen(skill)).toBe(true);
    expect(Object.isFrozen(skill.files)).toBe(true);
    expect(Object.isFrozen(skill.metadata)).toBe(true);
    expect(skill).not.toHaveProperty('extra');
    expect(skill).not.toHaveProperty('compatibility');
    expect(skill.files!['bin/x']).toEqual(new Uint8Array([1, 2]));
    expect(skill.files!['bin/x']).not.toBe(files['bin/x']);
    expect(validateSkillDefinition(skill)).toBe(skill);
  });

  it('accepts boundary lengths (64-char name, 1024 code-point description, 500-char compatibility)', () => {
    expect(() => define({ ...base, name: 'a'.repeat(64), description: '😀'.repeat(1024), compatibility: 'c'.repeat(500) })).not.toThrow();
    expect(() => define({ ...base, name: 'a1-b2-c3' })).not.toThrow();
  });

  it('rejects a non-object', () => {
    expect(issuesOf(() => define(null as never))[0]!.message).toMatch('must be an object');
    expect(issuesOf(() => define('x' as never)).length).toBe(1);
  });

  it.each([
    [{ name: undefined }, 'name', 'required'],
    [{ name: 42 }, 'name', 'must be a string'],
    [{ name: '   ' }, 'name', 'must not be empty'],
    [{ name: 'a'.repeat(65) }, 'name', 'at most 64'],
    [{ name: 'Review' }, 'name', 'lowercase'],
    [{ name: 'my_skill' }, 'name', 'lowercase'],
    [{ name: '-review' }, 'name', 'hyphen'],
    [{ name: 'review-' }, 'name', 'hyphen'],
    [{ name: 're--view' }, 'name', 'hyphen'],
    [{ description: undefined }, 'description', 'required'],
    [{ description: ' ' }, 'description', 'must not be empty'],
    [{ description: 'x'.repeat(1025) }, 'description', 'at most 1024'],
    [{ instructions: undefined }, 'instructions', 'required'],
    [{ instructions: '\n  ' }, 'instructions', 'must not be empty'],
    [{ license: 1 }, 'license', 'must be a string'],
    [{ compatibility: 'c'.repeat(501) }, 'compatibility', 'at most 500'],
    [{ compatibility: false }, 'compatibility', 'must be a string'],
    [{ metadata: 'x' }, 'metadata', 'object'],
    [{ metadata: { a: 'ok', b: 2 } }, 'metadata.b', 'values must be strings'],
    [{ allowedTools: ['read'] }, 'allowedTools', 'must be a string'],
    [{ files: 'x' }, 'files', 'object'],
    [{ files: { 'a.md': 3 } }, 'files.a.md', 'string or a Uint8Array'],
  ])('rejects %j at %s', (patch, path, message) => {
    const issues = issuesOf(() => define({ ...base, ...patch }));
    expect(issues).toHaveLength(1);
    expect(paths(issues)).toEqual([path]);
    expect(issues[0]!.message).toContain(message);
  });

  it.each(['SKILL.md', '../x', '/x', 'a\\b', 'a/', '', 'a//b', './a', 'a/../b', 'a\0b'])('rejects the file path %j', (file) => {
    const issues = issuesOf(() => define({ ...base, files: { [file]: 'x' } }));
    expect(issues).toHaveLength(1);
    expect(issues[0]!.path).toEqual(['files', file]);
  });

  it('reports missing required keys with their own messages', () => {
    const issues = issuesOf(() => define({}));
    expect(paths(issues)).toEqual(['name', 'description', 'instructions']);
    expect(issues.map((i) => i.message)).toEqual([
      '`name` is required and must be a string',
      '`description` is required and must be a string',
      '`instructions` is required and must be a string',
    ]);
    expect(paths(issuesOf(() => parseSkillMarkdown('---\nlicense: MIT\n---\n')))).toEqual(['name', 'description']);
  });

  it('collects every issue into one error', () => {
    const issues = issuesOf(() =>
      define({ name: 'Bad Name', description: '', instructions: '', metadata: { k: 1 }, files: { '../x': 'a', '/y': 'b' } }),
    );
    expect(paths(issues).sort()).toEqual(['description', 'files.../x', 'files./y', 'instructions', 'metadata.k', 'name']);
  });

  it('names the skill in the message', () => {
    expect(() => define({ ...base, description: '' })).toThrow(/^Invalid skill definition "review": `description`/);
  });
});

describe('parseSkillMarkdown', () => {
  it('parses frontmatter scalars as strings and the body as instructions', () => {
    const text = [
      '---',
      'name: review',
      'description: "Review a PR: \\"carefully\\"."  # comment',
      "license: 'Apache-2.0'",
      'compatibility: >-',
      '  Needs git',
      '  and gh.',
      'metadata:',
      '  version: 1.0',
      '  "owner": team-a',
      'allowed-tools: Bash(git:*) Read',
      'unknown-key: [1, 2]',
      '---',
      '',
      '# Review',
      'Body.',
      '',
    ].join('\r\n');
    const skill = parseSkillMarkdown(text);
    expect(skill).toEqual({
      name: 'review',
      description: 'Review a PR: "carefully".',
      license: 'Apache-2.0',
      compatibility: 'Needs git and gh.',
      metadata: { version: '1.0', owner: 'team-a' },
      allowedTools: 'Bash(git:*) Read',
      instructions: '# Review\nBody.\n',
    });
    expect(Object.isFrozen(skill)).toBe(true);
  });

  it('reads literal block scalars and folded plain continuation lines', () => {
    const skill = parseSkillMarkdown('---\nname: a\ndescription: first\n  second\nlicense: |\n  line 1\n  line 2\n---\nbody');
    expect(skill.description).toBe('first second');
    expect(skill.license).toBe('line 1\nline 2\n');
  });

  it('requires frontmatter', () => {
    expect(issuesOf(() => parseSkillMarkdown('# Just markdown'))[0]!.message).toContain('frontmatter');
    expect(issuesOf(() => parseSkillMarkdown('---\nname: a\n'))[0]!.message).toContain('never closed');
  });

  it('reports every frontmatter problem with the YAML key as path', () => {
    const issues = issuesOf(() =>
      parseSkillMarkdown('---\nname: Bad--Name\ncompatibility: ' + 'x'.repeat(501) + '\nmetadata: flat\n---\n'),
    );
    expect(paths(issues).sort()).toEqual(['compatibility', 'description', 'metadata', 'name']);
  });

  it('uses allowed-tools in messages and paths', () => {
    const issues = issuesOf(() => parseSkillMarkdown('---\nname: a\ndescription: d\nallowed-tools:\n  x: y\n---\n'));
    expect(issues[0]!.path).toEqual(['allowed-tools']);
    expect(issues[0]!.message).toContain('`allowed-tools`');
  });

  it('requires the name to equal the directory name', () => {
    const issues = issuesOf(() => parseSkillMarkdown('---\nname: review\ndescription: d\n---\n', { directoryName: 'other' }));
    expect(issues[0]!.message).toContain('must equal the skill\'s directory name "other"');
    expect(parseSkillMarkdown('---\nname: review\ndescription: d\n---\n', { directoryName: 'review' }).name).toBe('review');
  });

  it('reports malformed lines', () => {
    const issues = issuesOf(() => parseSkillMarkdown('---\nname: a\ndescription: d\n- item\n---\n'));
    expect(issues[0]!.message).toContain('line 4');
  });
});
