/**
 * Test helpers for src/build: throwaway projects under `node_modules/.cache/flue-tests/` (ignored
 * by git, and inside this checkout so packages resolve from its node_modules).
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from './package-root.ts';

export function testsDir(): string {
  const dir = path.join(packageRoot(), 'node_modules', '.cache', 'flue-tests');
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** A fresh empty directory; `files` are written into it (paths relative, `/`-separated). */
export function tempProject(prefix: string, files: Record<string, string> = {}): string {
  const dir = mkdtempSync(path.join(testsDir(), `${prefix}-`));
  writeFiles(dir, files);
  return dir;
}

/** A copy of `templates/<name>/` (file names as in the template, `_gitignore` included). */
export function templateCopy(prefix: string, template = 'cloudflare'): string {
  const dir = tempProject(prefix);
  cpSync(path.join(packageRoot(), 'templates', template), dir, { recursive: true });
  return dir;
}

export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [rel, text] of Object.entries(files)) {
    const file = path.join(dir, ...rel.split('/'));
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
  }
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** A minimal valid wrangler.jsonc for the given generated classes. */
export function wranglerJsonc(classes: string[], extra: Record<string, unknown> = {}): string {
  const config = {
    name: 'test-app',
    compatibility_date: '2026-08-01',
    compatibility_flags: ['nodejs_compat'],
    migrations: [{ tag: 'v1', new_sqlite_classes: classes }],
    ...extra,
  };
  return `// test config\n${JSON.stringify(config, null, 2).replace(/\n}$/, ',\n}')}\n`;
}

/** Offline wrangler environment (toolchain.md §3). */
export function offlineEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    WRANGLER_SEND_METRICS: 'false',
    CLOUDFLARE_CF_FETCH_ENABLED: 'false',
    XDG_CONFIG_HOME: path.join(packageRoot(), '.xdg'),
  };
}
