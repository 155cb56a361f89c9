/**
 * The re-entrancy guard the build puts into agent modules (agent-guard.ts), run for real: the
 * guarded module is imported against this checkout's runtime and rendered. An agent function that
 * calls another directly throws `[flue] Re-entrant agent render.`; every export shape the scan
 * accepts is entered through the guard; lines stay where they were.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { render } from '../runtime/authoring/render.ts';
import { ENTER_AGENT_LOCAL, guardAgentModule } from './agent-guard.ts';
import { packageRoot } from './package-root.ts';
import { removeDir, tempProject } from './test-project.ts';

const dir = tempProject('agent-guard');
afterAll(() => removeDir(dir));

// The runtime by path, and render() re-exported beside the agents: the module is loaded outside
// the test transformer, and the agents and render() must share one instance of the render state.
const RUNTIME = JSON.stringify(path.join(packageRoot(), 'src/runtime/index.ts'));
const RENDER = JSON.stringify(path.join(packageRoot(), 'src/runtime/authoring/render.ts'));
const SOURCE = `'use agent';
import { useInstruction, useModel } from ${RUNTIME};

export function Inner(): string {
  useModel('anthropic/claude-haiku-4-5');
  return 'inner';
}

export function Outer(): string {
  Inner();
  return 'outer';
}

export const Arrow = (): string => 'arrow';
export const Block = () => {
  useInstruction('block');
};
function Local() {
  return 'local';
}
export { Local as Renamed };
export default function Main() {
  return 'main';
}
export function helper() {
  return Inner();
}
`;

async function load(
  exportNames: string[],
): Promise<{ code: string; mod: Record<string, () => string | undefined>; render: typeof render }> {
  const code = await guardAgentModule(path.join(dir, 'agents.ts'), SOURCE, exportNames);
  const file = path.join(dir, `agents-${exportNames.length}.mjs`);
  writeFileSync(
    file,
    `${code}\nimport { __flueEnterAgent as ${ENTER_AGENT_LOCAL} } from ${RUNTIME};\nexport { render as __render } from ${RENDER};\n`,
  );
  const mod = (await import(pathToFileURL(file).href)) as Record<string, () => string | undefined> & { __render: typeof render };
  return { code, mod, render: mod.__render };
}

describe('guardAgentModule', () => {
  it('makes an agent function that calls another directly throw Re-entrant agent render; each agent renders alone', async () => {
    const { mod, render } = await load(['Inner', 'Outer', 'Arrow', 'Block', 'Renamed', 'default']);
    expect(() => render(mod.Outer!)).toThrow(/^\[flue\] Re-entrant agent render\./);
    expect(render(mod.Inner!).instructions).toBe('inner');
    expect(render(mod.Arrow!).instructions).toBe('arrow');
    expect(render(mod.Block!).instructions).toBe('block');
    expect(render(mod.Renamed!).instructions).toBe('local');
    expect(render(mod.default!).instructions).toBe('main');
    // A helper that is not an agent may call one: the one agent entered is the rendered one.
    expect(render(mod.helper!).instructions).toBe('inner');
    // Outside a render the guard does nothing; the hooks report their own misuse.
    expect(mod.Arrow!()).toBe('arrow');
    expect(() => mod.Inner!()).toThrow(/outside an agent function/);
  });

  it('guards only the listed exports and adds no line', async () => {
    const { code } = await load(['Outer']);
    expect(code.split(`${ENTER_AGENT_LOCAL}()`)).toHaveLength(2);
    const plain = (await guardAgentModule(path.join(dir, 'agents.ts'), SOURCE, [])).split('\n');
    const guarded = code.split('\n');
    expect(guarded).toHaveLength(plain.length);
    const changed = guarded.filter((line, i) => line !== plain[i]);
    expect(changed).toEqual([expect.stringMatching(/^export function Outer\(\) \{__flue_enter__\(\);$/)]);
  });
});
