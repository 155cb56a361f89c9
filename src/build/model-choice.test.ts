import { afterAll, describe, expect, it } from 'vitest';
import { type ModelHost, chooseModel } from './model-choice.ts';
import { removeDir, tempProject } from './test-project.ts';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));
function project(files: Record<string, string> = {}): string {
  const dir = tempProject('model-choice', files);
  dirs.push(dir);
  return dir;
}

const DEV: ModelHost = { vars: 'wrangler', command: 'dev' };
const NODE_DEV: ModelHost = { vars: 'node', command: 'dev' };
const RUN: ModelHost = { vars: 'node', command: 'run' };
const TOOL_SENTENCE = 'It echoes your message; send `/tool <tool_name> {"argument":"value"}` to make it call that tool of the agent.';

describe('flue dev on Cloudflare: which model', () => {
  const agent = { 'src/agents/a.ts': "'use agent';\nexport function A() { useModel('openai/gpt-5'); return 'x'; }\n" };

  it('serves the offline model without a provider key, says how to call a tool, and names the key of the provider in use', () => {
    const choice = chooseModel(project({ ...agent, '.dev.vars': 'ANTHROPIC_API_KEY=\nOPERATOR_TOKEN=t\n' }), 'auto', DEV, {});
    expect(choice).toEqual({
      scripted: true,
      notice: `[flue] Model: scripted, offline. ${TOOL_SENTENCE} For a real model put OPENAI_API_KEY=… in .dev.vars, or pass --real-model.`,
    });
    expect(chooseModel(project(), 'auto', DEV, {}).notice).toContain('put ANTHROPIC_API_KEY=… in .dev.vars');
  });

  it('uses the real model when .dev.vars (else .env) has a key; the flags force either way', () => {
    const withKey = project({ '.dev.vars': 'ANTHROPIC_API_KEY=sk-test\n' });
    expect(chooseModel(withKey, 'auto', DEV, {})).toEqual({
      scripted: false,
      notice: '[flue] Model: real (ANTHROPIC_API_KEY); `flue dev --scripted` serves the offline scripted model.',
    });
    expect(chooseModel(withKey, 'scripted', DEV, {}).scripted).toBe(true);
    expect(chooseModel(withKey, 'scripted', DEV, {}).notice).toContain('and drop --scripted');
    expect(chooseModel(project({ '.env': 'OPENAI_API_KEY=sk-test\n' }), 'auto', DEV, {}).scripted).toBe(false);
    // wrangler reads .env only when there is no .dev.vars
    expect(chooseModel(project({ '.dev.vars': 'X=1\n', '.env': 'OPENAI_API_KEY=sk-test\n' }), 'auto', DEV, {}).scripted).toBe(true);
    expect(chooseModel(project(), 'real', DEV, {})).toEqual({
      scripted: false,
      notice: '[flue] Model: real (--real-model), but no provider key is set: put ANTHROPIC_API_KEY=… in .dev.vars.',
    });
    // The process environment reaches the Worker only when wrangler is told to include it.
    expect(chooseModel(project(), 'auto', DEV, { ANTHROPIC_API_KEY: 'sk' }).scripted).toBe(true);
    expect(chooseModel(project(), 'auto', DEV, { ANTHROPIC_API_KEY: 'sk', CLOUDFLARE_INCLUDE_PROCESS_ENV: 'true' }).scripted).toBe(false);
  });

  it("keeps the user's own FLUE_SCRIPTED_MODEL_URL", () => {
    expect(chooseModel(project({ '.dev.vars': 'FLUE_SCRIPTED_MODEL_URL=http://127.0.0.1:9999\n' }), 'auto', DEV, {})).toEqual({
      scripted: false,
      notice: '[flue] Model: the scripted model server at http://127.0.0.1:9999 (FLUE_SCRIPTED_MODEL_URL).',
    });
  });
});

describe('flue run and flue dev --target node: which model', () => {
  it('reads the key from the process environment and the env file, and names them', () => {
    expect(chooseModel(project(), 'auto', RUN, {})).toEqual({
      scripted: true,
      notice: `[flue] Model: scripted, offline. ${TOOL_SENTENCE} For a real model put ANTHROPIC_API_KEY=… in .env or the environment, or pass --real-model.`,
    });
    expect(chooseModel(project(), 'auto', RUN, { ANTHROPIC_API_KEY: 'sk' })).toEqual({
      scripted: false,
      notice: '[flue] Model: real (ANTHROPIC_API_KEY); `flue run --scripted` serves the offline scripted model.',
    });
    expect(chooseModel(project({ '.env': 'ANTHROPIC_API_KEY=sk\n' }), 'auto', NODE_DEV, {}).scripted).toBe(false);
    // .dev.vars is wrangler's file; a Node process never reads it.
    expect(chooseModel(project({ '.dev.vars': 'ANTHROPIC_API_KEY=sk\n' }), 'auto', NODE_DEV, {}).scripted).toBe(true);
    const other = project({ 'other.env': 'ANTHROPIC_API_KEY=sk\n' });
    expect(chooseModel(other, 'auto', { ...RUN, envFile: 'other.env' }, {}).scripted).toBe(false);
    expect(chooseModel(project(), 'real', { ...RUN, envFile: 'other.env' }, {}).notice).toBe(
      '[flue] Model: real (--real-model), but no provider key is set: put ANTHROPIC_API_KEY=… in other.env or the environment.',
    );
    expect(chooseModel(project(), 'auto', RUN, { FLUE_SCRIPTED_MODEL_URL: 'http://127.0.0.1:1' }).scripted).toBe(false);
  });
});
