/**
 * The `flue dev` rebuild loop against real files: every kind of save under `src/` triggers a
 * rebuild, repeatedly. Each step waits for a rebuild that reads the step's new content, so a late
 * event of an earlier step can never satisfy it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { type SourceWatch, watchSources } from './source-watch.ts';
import { removeDir, tempProject } from './test-project.ts';

const WAIT_MS = 5_000;

interface Harness {
  dir: string;
  file(rel: string): string;
  /** Runs `change`, then waits for a rebuild during which `rel` reads `expected`. */
  expectRebuild(rel: string, expected: string, change: () => void): Promise<void>;
}

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function harness(files: Record<string, string>): Harness {
  const dir = tempProject('watch', files);
  const file = (rel: string) => path.join(dir, ...rel.split('/'));
  const waiters: { rel: string; expected: string; resolve(): void }[] = [];
  const read = (rel: string) => {
    try {
      return readFileSync(file(rel), 'utf8');
    } catch {
      return undefined;
    }
  };
  const errors: string[] = [];
  const watch: SourceWatch = watchSources({
    root: dir,
    rootFiles: new Set(['wrangler.jsonc']),
    stderr: (text) => errors.push(text),
    rebuild: async () => {
      for (const waiter of waiters.splice(0)) {
        if (read(waiter.rel) === waiter.expected) waiter.resolve();
        else waiters.push(waiter);
      }
    },
  });
  cleanups.push(() => {
    watch.close();
    removeDir(dir);
    expect(errors).toEqual([]);
  });
  return {
    dir,
    file,
    async expectRebuild(rel, expected, change) {
      const seen = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no rebuild saw ${rel} = ${JSON.stringify(expected)} within ${WAIT_MS} ms`)),
          WAIT_MS,
        );
        waiters.push({ rel, expected, resolve: () => (clearTimeout(timer), resolve()) });
      });
      change();
      await seen;
    },
  };
}

/** An editor's atomic save: a temporary file beside the target, renamed over it. */
function renameOver(target: string, text: string): void {
  const tmp = path.join(path.dirname(target), `.${path.basename(target)}.tmp-save`);
  writeFileSync(tmp, text);
  renameSync(tmp, target);
}

describe('watchSources', () => {
  it('rebuilds on in-place writes, repeatedly', async () => {
    const h = harness({ 'src/app.ts': 'v0' });
    for (const v of ['v1', 'v2', 'v3']) await h.expectRebuild('src/app.ts', v, () => writeFileSync(h.file('src/app.ts'), v));
  });

  it('keeps seeing a file after rename-over saves (and sed -i), whatever kind of save follows', async () => {
    const h = harness({ 'src/agents/hello.ts': 'v0', 'src/app.ts': 'app' });
    const hello = h.file('src/agents/hello.ts');
    await h.expectRebuild('src/agents/hello.ts', 'v1', () => renameOver(hello, 'v1'));
    await h.expectRebuild('src/agents/hello.ts', 'v2', () => writeFileSync(hello, 'v2'));
    await h.expectRebuild('src/agents/hello.ts', 'v3', () => renameOver(hello, 'v3'));
    await h.expectRebuild('src/agents/hello.ts', 'v4', () => renameOver(hello, 'v4'));
    await h.expectRebuild('src/agents/hello.ts', 'v5', () => {
      const sed = spawnSync('sed', ['-i', 's/v4/v5/', hello]);
      expect(sed.status).toBe(0);
    });
    await h.expectRebuild('src/agents/hello.ts', 'v6', () => writeFileSync(hello, 'v6'));
  });

  it('keeps seeing a file that is deleted and created again', async () => {
    const h = harness({ 'src/app.ts': 'v0' });
    const app = h.file('src/app.ts');
    await h.expectRebuild('src/app.ts', 'v1', () => {
      rmSync(app);
      writeFileSync(app, 'v1');
    });
    await h.expectRebuild('src/app.ts', 'v2', () => writeFileSync(app, 'v2'));
  });

  it('sees new files and new folders, and edits inside them', async () => {
    const h = harness({ 'src/app.ts': 'app' });
    await h.expectRebuild('src/tools.ts', 'new', () => writeFileSync(h.file('src/tools.ts'), 'new'));
    await h.expectRebuild('src/tools.ts', 'edited', () => writeFileSync(h.file('src/tools.ts'), 'edited'));
    await h.expectRebuild('src/agents/deep/er/a.ts', 'a0', () => {
      mkdirSync(h.file('src/agents/deep/er'), { recursive: true });
      writeFileSync(h.file('src/agents/deep/er/a.ts'), 'a0');
    });
    await h.expectRebuild('src/agents/deep/er/a.ts', 'a1', () => writeFileSync(h.file('src/agents/deep/er/a.ts'), 'a1'));
    await h.expectRebuild('src/agents/deep/er/a.ts', 'a2', () => renameOver(h.file('src/agents/deep/er/a.ts'), 'a2'));
    await h.expectRebuild('src/agents/deep/er/b.ts', 'b0', () => writeFileSync(h.file('src/agents/deep/er/b.ts'), 'b0'));
  });

  it('keeps seeing a folder that is removed and created again, and a replaced src/', async () => {
    const h = harness({ 'src/app.ts': 'app', 'src/agents/a.ts': 'a0' });
    await h.expectRebuild('src/agents/a.ts', 'a1', () => {
      rmSync(h.file('src/agents'), { recursive: true });
      mkdirSync(h.file('src/agents'));
      writeFileSync(h.file('src/agents/a.ts'), 'a1');
    });
    await h.expectRebuild('src/agents/a.ts', 'a2', () => writeFileSync(h.file('src/agents/a.ts'), 'a2'));
    // The whole of src/ swapped for another directory (a branch checkout, a restore).
    await h.expectRebuild('src/agents/a.ts', 'a3', () => {
      mkdirSync(h.file('src.next/agents'), { recursive: true });
      writeFileSync(h.file('src.next/app.ts'), 'app');
      writeFileSync(h.file('src.next/agents/a.ts'), 'a3');
      renameSync(h.file('src'), h.file('src.old'));
      renameSync(h.file('src.next'), h.file('src'));
    });
    await h.expectRebuild('src/agents/a.ts', 'a4', () => writeFileSync(h.file('src/agents/a.ts'), 'a4'));
  });

  it('rebuilds when a watched root file is saved either way', async () => {
    const h = harness({ 'src/app.ts': 'app', 'wrangler.jsonc': '{}' });
    await h.expectRebuild('wrangler.jsonc', '{"a":1}', () => renameOver(h.file('wrangler.jsonc'), '{"a":1}'));
    await h.expectRebuild('wrangler.jsonc', '{"a":2}', () => writeFileSync(h.file('wrangler.jsonc'), '{"a":2}'));
  });
});
