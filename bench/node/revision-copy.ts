/**
 * A git revision of this repository as a runnable copy, for the A/B tools (side-by-side-ab.ts,
 * wrangler-ab.ts): its sources exported into bench/.results/ab/<commit>/, this checkout's
 * dependencies linked into it, `@flue/runtime` pointed at the copy, and its own dist/ built once.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { resultsDir } from '../results.ts';

export const root = fileURLToPath(new URL('../..', import.meta.url));

/** The copy of `rev` (any revision git names), built; made on first use. */
export function revisionCopy(rev: string): string {
  const commit = spawnSync('git', ['rev-parse', '--verify', `${rev}^{commit}`], { cwd: root, encoding: 'utf8' });
  if (commit.status !== 0) throw new Error(`not a revision: ${rev}\n${commit.stderr}`);
  const dir = path.join(resultsDir, 'ab', commit.stdout.trim());
  if (existsSync(path.join(dir, 'dist', '.built'))) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(path.join(dir, 'node_modules', '@flue'), { recursive: true });
  const exported = spawnSync('sh', ['-c', 'git archive "$1" | tar -x -C "$2"', 'sh', commit.stdout.trim(), dir], {
    cwd: root,
    encoding: 'utf8',
  });
  if (exported.status !== 0) throw new Error(`git archive failed\n${exported.stderr}`);
  const modules = path.join(root, 'node_modules');
  for (const name of readdirSync(modules)) {
    if (name !== '@flue') symlinkSync(path.join(modules, name), path.join(dir, 'node_modules', name));
  }
  for (const name of readdirSync(path.join(modules, '@flue'))) {
    if (name !== 'runtime') symlinkSync(path.join(modules, '@flue', name), path.join(dir, 'node_modules', '@flue', name));
  }
  symlinkSync(dir, path.join(dir, 'node_modules', '@flue', 'runtime'));
  const built = spawnSync(process.execPath, ['scripts/build-dist.mjs', '--force'], { cwd: dir, encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`building ${rev} failed\n${built.stderr}`);
  return dir;
}
