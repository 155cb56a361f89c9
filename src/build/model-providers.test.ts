import { afterAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { inferModelProviders, scanSource } from './model-providers.ts';
import { removeDir, tempProject } from './test-project.ts';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

describe('scanSource', () => {
  it('reads literal provider prefixes from useModel and model options', async () => {
    const sites = await scanSource(
      'a.ts',
      [
        "import { useModel, useSubagent, defineSubagent, defineSkill } from '@flue/runtime';",
        "const FAST: string = 'google/gemini-2.5-flash';",
        'type T = { model: string };',
        'export function A() {',
        "  useModel('anthropic/claude-haiku-4-5');",
        "  useSubagent({ name: 's', model: 'openai/gpt-5' });",
        '  useModel(FAST);',
        "  useModel(process.env.X ? 'xai/grok-4' : 'groq/llama');",
        '}',
        "export const reviewer = defineSubagent({ name: 'r', model: `mistral/${'x'}` });",
        "export const skill = defineSkill({ name: 'k', 'model': 'deepseek/chat' });",
      ].join('\n'),
    );
    expect(sites?.computed).toEqual([]);
    expect(sites?.literal.map((s) => s.provider).sort()).toEqual(['anthropic', 'deepseek', 'google', 'groq', 'mistral', 'openai', 'xai']);
    expect(sites?.literal.find((s) => s.provider === 'openai')?.line).toBe(6);
  });

  it('reports computed ids with their original line (TypeScript erased before it)', async () => {
    const sites = await scanSource(
      'b.ts',
      [
        "import { useModel } from '@flue/runtime';",
        'interface Options {',
        '  model: string;',
        '}',
        '',
        'export function B(options: Options) {',
        '  useModel(options.model as string);',
        '  session.prompt("x", { model: pick() });',
        '}',
      ].join('\n'),
    );
    expect(sites?.literal).toEqual([]);
    expect(sites?.computed).toEqual([
      { line: 7, what: 'useModel(...)' },
      { line: 8, what: 'model: ...' },
    ]);
  });
});

describe('inferModelProviders', () => {
  it('follows the project modules an agent imports, not packages', async () => {
    const dir = tempProject('model-providers', {
      'src/agents/a.ts':
        "'use agent';\nimport prompt from '../prompts/a.md';\nimport wasm from '../lib/x.wasm';\nimport { reviewer } from '../subagents/reviewer.ts';\nimport { useModel, useSubagent } from '@flue/runtime';\nexport function A() { useModel('anthropic/claude-haiku-4-5'); useSubagent(reviewer); return ''; }\n",
      'src/subagents/reviewer.ts': "export const reviewer = { name: 'reviewer', model: 'openai/gpt-5-mini' };\n",
      'src/unrelated.ts': "export const x = { model: 'google/gemini-2.5-pro' };\n",
    });
    dirs.push(dir);
    const inferred = await inferModelProviders({ root: dir, entries: [path.join(dir, 'src/agents/a.ts')] });
    expect(inferred.providers).toEqual(['anthropic', 'openai']);
    expect(inferred.sites.get('openai')).toEqual({ file: 'src/subagents/reviewer.ts', line: 1 });
    expect(inferred.computed).toEqual([]);
    expect(inferred.files).toEqual(['src/agents/a.ts', 'src/subagents/reviewer.ts']);
  });
});
