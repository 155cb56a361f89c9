import { beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageRoot, resolveRuntimeExport, runtimeSubpath } from './package-root.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('package root and @flue/runtime exports', () => {
  // Resolution checks that the built files exist (npm scripts build them through preflight).
  beforeAll(async () => {
    const { buildDist, isStale } = await import('../../scripts/build-dist.mjs');
    if (isStale()) await buildDist();
  });

  it('finds this package from the build sources', () => {
    expect(packageRoot()).toBe(root);
  });

  it('maps specifiers to exports subpaths', () => {
    expect(runtimeSubpath('@flue/runtime')).toBe('.');
    expect(runtimeSubpath('@flue/runtime/node')).toBe('./node');
    expect(runtimeSubpath('@flue/runtime-extra')).toBeUndefined();
    expect(runtimeSubpath('hono')).toBeUndefined();
  });

  it('resolves through the exports map to this checkout’s files', () => {
    // Node and Workers get the built JavaScript (what the published package runs); `flue-source`
    // (this repository's tests) gets the sources.
    expect(resolveRuntimeExport('@flue/runtime', ['import'])).toBe(path.join(root, 'dist/index.js'));
    expect(resolveRuntimeExport('@flue/runtime/node', ['node', 'import'])).toBe(path.join(root, 'dist/node.js'));
    expect(resolveRuntimeExport('@flue/runtime/node', ['flue-source', 'node', 'import'])).toBe(path.join(root, 'src/node/index.ts'));
    expect(resolveRuntimeExport('@flue/runtime/node', ['workerd', 'worker', 'browser', 'import', 'default'])).toBe(
      path.join(root, 'dist/node.js'),
    );
    expect(resolveRuntimeExport('@flue/runtime/tool', ['workerd'])).toBe(path.join(root, 'dist/modules/runtime/tool-entry.js'));
    expect(resolveRuntimeExport('@flue/runtime/tool', ['node', 'import'])).toBe(path.join(root, 'dist/tool.js'));
    expect(resolveRuntimeExport('@flue/runtime/cloudflare', ['flue-source', 'workerd'])).toBe(
      path.join(root, 'src/durable-objects/index.ts'),
    );
  });

  it('a Worker gets one module per source file, whose relative imports all name built modules', () => {
    const entry = resolveRuntimeExport('@flue/runtime/cloudflare', ['workerd', 'worker', 'browser', 'import', 'default']);
    expect(entry).toBe(path.join(root, 'dist/modules/durable-objects/index.js'));
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(/(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g)) {
        const target = path.resolve(path.dirname(file), match[1]!);
        expect(existsSync(target), `${path.relative(root, file)} imports ${match[1]}`).toBe(true);
        visit(target);
      }
    };
    visit(entry);
    // The runtime's own files, each on its own: not the Node build's shared chunks.
    expect(seen).toContain(path.join(root, 'dist/modules/runtime/engine/response-run.js'));
    expect([...seen].every((file) => file.startsWith(path.join(root, 'dist/modules') + path.sep))).toBe(true);
  });

  it('names the available entries for an unexported subpath', () => {
    expect(() => resolveRuntimeExport('@flue/runtime/internal', ['import'])).toThrow(
      /^\[flue\] "@flue\/runtime\/internal" is not exported by @flue\/runtime\. Available: @flue\/runtime, @flue\/runtime\/tool, @flue\/runtime\/routing, @flue\/runtime\/node/,
    );
  });
});
