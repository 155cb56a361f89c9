import { describe, expect, it } from 'vitest';
import { toolParameters } from '../authoring/define-tool.ts';
import type { ToolDefinition } from '../authoring/define-tool.ts';
import { skillCatalog, skillCatalogLine, SKILL_CATALOG_INSTRUCTION } from './catalog.ts';
import { defineSkill } from './define-skill.ts';
import { packageSkillDefinition } from './package.ts';
import { activateSkillTool, hasSkillResources, readSkillResourceTool, SKILL_RESOURCES_LINE } from './tools.ts';

const review = packageSkillDefinition(
  defineSkill({
    name: 'review',
    description: 'Review a PR.',
    instructions: '\n# Review\n\nRead the diff.\n\n',
    files: { 'scripts/run.sh': 'echo 1\necho 2\necho 3\n', 'ref/a.md': 'A', 'logo.png': new Uint8Array(100).fill(200) },
  }),
);
const plain = packageSkillDefinition(defineSkill({ name: 'plain', description: 'Plain.', instructions: 'Do it.' }));

const call = (tool: ToolDefinition, data: Record<string, unknown>) =>
  (tool.run as (ctx: unknown) => string)({ toolCallId: 't', log: console, data });

describe('skillCatalog', () => {
  it('renders the Available Skills section', () => {
    expect(skillCatalog([review, plain])).toBe(
      `## Available Skills\n\n${SKILL_CATALOG_INSTRUCTION}\n\n- **review** — Review a PR.\n- **plain** — Plain.`,
    );
    expect(SKILL_CATALOG_INSTRUCTION).toContain('activate_skill');
    expect(skillCatalog([])).toBeUndefined();
    expect(skillCatalogLine({ name: 'x', description: '' })).toBe('- **x**');
  });
});

describe('activate_skill', () => {
  const tool = activateSkillTool([review, plain]);

  it('has a plain string parameter', () => {
    expect(tool.name).toBe('activate_skill');
    expect(toolParameters(tool)).toEqual({
      type: 'object',
      properties: { name: { type: 'string', description: 'The name of the skill to activate' } },
      required: ['name'],
    });
  });

  it('returns the instructions without resources', () => {
    expect(call(tool, { name: 'plain' })).toBe('Run the skill named "plain".\n\n<skill_instructions>\nDo it.\n</skill_instructions>');
  });

  it('lists resources, sorted, with encoded ids', () => {
    const id = encodeURIComponent(review.id);
    expect(call(tool, { name: 'review' })).toBe(
      'Run the skill named "review".\n\n<skill_instructions>\n# Review\n\nRead the diff.\n</skill_instructions>\n\n' +
        `${SKILL_RESOURCES_LINE}\n<skill_resources>\n` +
        `- logo.png → read_skill_resource /.flue/packaged-skills/${id}/logo.png\n` +
        `- ref/a.md → read_skill_resource /.flue/packaged-skills/${id}/ref/a.md\n` +
        `- scripts/run.sh → read_skill_resource /.flue/packaged-skills/${id}/scripts/run.sh\n` +
        '</skill_resources>',
    );
  });

  it('answers an unknown name with the miss text (not an error)', () => {
    expect(call(tool, { name: 'deploy' })).toBe('Skill "deploy" is not available. Available skills: review, plain.');
    expect(call(activateSkillTool([]), { name: 'x' })).toBe('Skill "x" is not available. Available skills: (none).');
  });

  it('resolves against the live set at call time', () => {
    let live = [plain];
    const dynamic = activateSkillTool(() => live);
    expect(call(dynamic, { name: 'review' })).toContain('is not available');
    live = [plain, review];
    expect(call(dynamic, { name: 'review' })).toContain('<skill_instructions>');
  });
});

describe('read_skill_resource', () => {
  const tool = readSkillResourceTool([review, plain]);
  const base = `/.flue/packaged-skills/${encodeURIComponent(review.id)}`;

  it('is needed only when a skill has files besides SKILL.md', () => {
    expect(hasSkillResources([plain])).toBe(false);
    expect(hasSkillResources([plain, review])).toBe(true);
    expect(tool.name).toBe('read_skill_resource');
    expect(toolParameters(tool)).toMatchObject({
      required: ['path'],
      properties: { offset: { type: 'integer' }, limit: { type: 'integer' } },
    });
  });

  it('reads a file by the advertised path, encoded or decoded, with read paging', () => {
    expect(call(tool, { path: `${base}/ref/a.md` })).toBe('A');
    expect(call(tool, { path: `/.flue/packaged-skills/${review.id}/ref/a.md` })).toBe('A');
    expect(call(tool, { path: `${base}/scripts/run.sh`, offset: 2, limit: 1 })).toBe(
      'echo 2\n\n[Showing lines 2-2 of 3. Use offset=3 to continue.]',
    );
  });

  it('serves binary files as base64 wrapped at 76 characters', () => {
    const text = call(tool, { path: `${base}/logo.png` });
    const lines = text.split('\n');
    expect(lines[0]).toHaveLength(76);
    expect(Buffer.from(lines.join(''), 'base64')).toEqual(Buffer.alloc(100, 200));
  });

  it('fails on an unknown path', () => {
    expect(() => call(tool, { path: `${base}/missing.md` })).toThrow(`[flue] Packaged skill file not found: ${base}/missing.md`);
    expect(() => call(tool, { path: '/etc/passwd' })).toThrow('[flue] Packaged skill file not found: /etc/passwd');
  });
});

describe('through the tool runner', () => {
  it('parses arguments with the valibot input and returns the text as output', async () => {
    const { invokeTool, runToolCall } = await import('../tools/tool-runner.ts');
    expect((await invokeTool(activateSkillTool([plain]), { name: 'plain' })).output).toContain('<skill_instructions>\nDo it.');
    const bad = await runToolCall(
      activateSkillTool([plain]),
      { name: 3 },
      { toolCallId: 'c', signal: new AbortController().signal, log: console },
    );
    expect(bad.isError).toBe(true);
    const miss = await runToolCall(
      readSkillResourceTool([review]),
      { path: '/nope' },
      { toolCallId: 'c', signal: new AbortController().signal, log: console },
    );
    expect(miss).toMatchObject({ isError: true });
    expect(miss.content).toContain('[flue] Packaged skill file not found: /nope');
  });
});
