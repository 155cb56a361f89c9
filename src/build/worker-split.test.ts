import { afterAll, beforeAll, expect, it } from 'vitest';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { removeDir, tempProject } from './test-project.ts';
import { liveInputs, splitBuildOptions } from './worker-split.ts';

// An entry that reaches one lazily imported module and has another import() only in dead code.
let root: string;
let outputs: Map<string, string>;

beforeAll(async () => {
  root = tempProject('worker-split', {
    'src/entry.js': [
      "export async function used() { return (await import('./lazy.js')).value; }",
      "function unused() { return import('./dead.js'); }",
      'export default { fetch: used };',
    ].join('\n'),
    'src/lazy.js': "export const value = 'lazy-module-body';\n",
    'src/dead.js': "export const value = 'dead-module-body';\n",
  });
  const single = {
    entryPoints: [path.join(root, 'src/entry.js')],
    absWorkingDir: root,
    outfile: path.join(root, 'dist/worker.js'),
    bundle: true,
    format: 'esm',
    write: false,
    metafile: true,
    logLevel: 'silent',
  } satisfies esbuild.BuildOptions;
  const one = await esbuild.build(single);
  const split = await esbuild.build(splitBuildOptions(single, root, liveInputs(one.metafile)));
  outputs = new Map(split.outputFiles.map((f) => [path.relative(root, f.path).split(path.sep).join('/'), f.text]));
});

afterAll(() => removeDir(root));

it('liveInputs: the inputs with bytes in the one-file build (the dead import() target has none)', async () => {
  const one = await esbuild.build({
    entryPoints: [path.join(root, 'src/entry.js')],
    absWorkingDir: root,
    bundle: true,
    format: 'esm',
    write: false,
    metafile: true,
  });
  expect([...liveInputs(one.metafile)].sort()).toEqual(['src/entry.js', 'src/lazy.js']);
});

it('the entry stays dist/worker.js; a reached import() target is a chunk it does not import statically', () => {
  const worker = outputs.get('dist/worker.js')!;
  expect(worker).toBeDefined();
  expect(worker).not.toContain('lazy-module-body');
  expect(worker).not.toMatch(/^import /m);
  const lazy = [...outputs].find(([file, text]) => file.startsWith('dist/chunks/') && text.includes('lazy-module-body'));
  expect(lazy?.[0]).toMatch(/^dist\/chunks\/lazy-\w+\.js$/);
});

it('an import() the one-file build dropped resolves to a module that throws naming it, not to its code', async () => {
  expect([...outputs.values()].some((text) => text.includes('dead-module-body'))).toBe(false);
  const [file, stub] = [...outputs].find(([, text]) => text.includes('is not in this Worker'))!;
  expect(file).toMatch(/^dist\/chunks\/dead-\w+\.js$/);
  expect(stub).toContain('throw new Error("[flue] src/dead.js is not in this Worker');
});
