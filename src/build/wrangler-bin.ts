/**
 * Locating and running wrangler (build-and-cli.md §5.1): the project's own install first, then the
 * one this package depends on; always run with the current Node binary.
 */
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { packageRoot } from './package-root.ts';
import { FlueBuildError } from './build-errors.ts';

/** Absolute path of wrangler's bin script. */
export function resolveWranglerBin(root: string): string {
  for (const base of [root, packageRoot()]) {
    let manifest: string;
    try {
      manifest = createRequire(path.join(base, 'package.json')).resolve('wrangler/package.json');
    } catch {
      continue;
    }
    const json = JSON.parse(readFileSync(manifest, 'utf8')) as { bin?: string | Record<string, string> };
    const bin = typeof json.bin === 'string' ? json.bin : json.bin?.['wrangler'];
    if (bin !== undefined) return path.resolve(path.dirname(manifest), bin);
  }
  throw new FlueBuildError('WranglerNotFoundError', 'wrangler is not installed. Add it to the project: npm install -D wrangler');
}

/**
 * The environment for `wrangler dev`: no metrics, no `Request.cf` download, wrangler's config and
 * logs kept inside the project. Values the user already set win.
 */
export function offlineWranglerEnv(root: string, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return {
    ...base,
    WRANGLER_SEND_METRICS: base['WRANGLER_SEND_METRICS'] ?? 'false',
    CLOUDFLARE_CF_FETCH_ENABLED: base['CLOUDFLARE_CF_FETCH_ENABLED'] ?? 'false',
    XDG_CONFIG_HOME: base['XDG_CONFIG_HOME'] ?? path.join(root, '.xdg'),
  };
}

export function spawnWrangler(root: string, args: readonly string[], options: SpawnOptions = {}): ChildProcess {
  return spawn(process.execPath, [resolveWranglerBin(root), ...args], { cwd: root, ...options });
}
