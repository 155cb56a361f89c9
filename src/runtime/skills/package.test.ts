import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sha256Hex, utf8 } from '../../shared/skill-bytes.ts';
import { createSkillReference, skillPackageId } from '../../shared/skill-format.ts';
import { defineSkill } from './define-skill.ts';
import { parseSkillMarkdown } from './frontmatter.ts';
import { DuplicateSkillError, SkillDefinitionValidationError } from './errors.ts';
import {
  collectSkills,
  packageSkillDefinition,
  packagedFileBytes,
  resolvePackagedSkillFile,
  synthesizeSkillMarkdown,
  validateSkillMount,
} from './package.ts';

const def = defineSkill({
  name: 'review',
  description: 'Review a PR.',
  instructions: '# Review\n',
  metadata: { z: '1', a: '2' },
  allowedTools: 'read',
  files: { 'ref/guide.md': 'Guide', 'img.bin': new Uint8Array([0, 255, 1]) },
});

describe('sha256Hex', () => {
  it.each([0, 1, 55, 56, 64, 1000])('matches node:crypto for %i bytes', (n) => {
    const data = Uint8Array.from({ length: n }, (_, i) => (i * 31) & 0xff);
    expect(sha256Hex(data)).toBe(createHash('sha256').update(data).digest('hex'));
  });
});

describe('packaging', () => {
  it('synthesizes JSON-quoted frontmatter that parses back', () => {
    const text = synthesizeSkillMarkdown(def);
    expect(text).toBe(
      '---\nname: "review"\ndescription: "Review a PR."\nmetadata:\n  "a": "2"\n  "z": "1"\nallowed-tools: "read"\n---\n# Review\n',
    );
    const back = parseSkillMarkdown(text);
    expect(back).toEqual({
      name: 'review',
      description: 'Review a PR.',
      metadata: { a: '2', z: '1' },
      allowedTools: 'read',
      instructions: '# Review\n',
    });
  });

  it('packages a definition once, into the SKILL.md import shape', () => {
    const ref = packageSkillDefinition(def);
    expect(packageSkillDefinition(def)).toBe(ref);
    expect(ref.__flueSkillReference).toBe(true);
    expect(ref.id).toMatch(/^skill:review:[0-9a-f]{16}$/);
    expect(Object.keys(ref.files)).toEqual(['SKILL.md', 'img.bin', 'ref/guide.md']);
    expect(ref.files['img.bin']).toEqual({ kind: 'binary', content: 'AP8B' });
    expect(ref.files['ref/guide.md']).toEqual({ kind: 'text', content: 'Guide' });
    expect(packagedFileBytes(ref.files['img.bin']!)).toEqual(new Uint8Array([0, 255, 1]));
    expect(Object.isFrozen(ref) && Object.isFrozen(ref.files) && Object.isFrozen(ref.files['SKILL.md'])).toBe(true);
  });

  it('computes the id from sorted (u32 len, u32 len, path, content) records', () => {
    const files = { 'b.txt': utf8('B'), 'a.txt': utf8('AA') };
    const expected = createHash('sha256');
    for (const [p, c] of [
      ['a.txt', 'AA'],
      ['b.txt', 'B'],
    ] as const) {
      const header = Buffer.alloc(8);
      header.writeUInt32BE(p.length, 0);
      header.writeUInt32BE(c.length, 4);
      expected.update(header).update(p).update(c);
    }
    expect(skillPackageId('x', files)).toBe(`skill:x:${expected.digest('hex').slice(0, 16)}`);
    const fields = { name: 'x', description: 'd', instructions: 'i' };
    expect(createSkillReference(fields, { 'a.txt': 'AA', 'b.txt': 'B' }).id).toBe(skillPackageId('x', files));
  });

  it('validateSkillMount accepts references and definitions, rejects the rest', () => {
    const ref = packageSkillDefinition(def);
    expect(validateSkillMount(ref)).toBe(ref);
    expect(validateSkillMount(def)).toBe(ref);
    const inline = validateSkillMount({ name: 'inline', description: 'd', instructions: 'i' });
    expect(inline.id).toMatch(/^skill:inline:/);
    for (const bad of [null, 'x', 3, [def]]) {
      expect(() => validateSkillMount(bad)).toThrow(SkillDefinitionValidationError);
    }
    expect(() => validateSkillMount({ name: 'x' })).toThrow(SkillDefinitionValidationError);
    expect(() => validateSkillMount({ __flueSkillReference: true, id: 'nope', name: 'x' })).toThrow(SkillDefinitionValidationError);
  });

  it('collectSkills rejects a name mounted twice', () => {
    const err = (() => {
      try {
        collectSkills([def, { name: 'review', description: 'again', instructions: 'x' }]);
      } catch (error) {
        return error;
      }
    })();
    expect(err).toBeInstanceOf(DuplicateSkillError);
    expect((err as DuplicateSkillError).type).toBe('skill_definition_validation');
  });

  it('resolves packaged paths with the id encoded or decoded', () => {
    const ref = packageSkillDefinition(def);
    const enc = `/.flue/packaged-skills/${encodeURIComponent(ref.id)}/ref/guide.md`;
    const dec = `/.flue/packaged-skills/${ref.id}/ref/guide.md`;
    expect(resolvePackagedSkillFile([ref], enc)?.path).toBe('ref/guide.md');
    expect(resolvePackagedSkillFile([ref], dec)?.file.content).toBe('Guide');
    expect(resolvePackagedSkillFile([ref], `/.flue/packaged-skills/${ref.id}/nope`)).toBeUndefined();
    expect(resolvePackagedSkillFile([ref], '/etc/passwd')).toBeUndefined();
  });
});
