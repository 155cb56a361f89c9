import { beforeAll, describe, expect, it } from 'vitest';
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
    expect(resolveRuntimeExport('@flue/runtime/tool', ['workerd'])).toBe(path.join(root, 'dist/tool.js'));
    expect(resolveRuntimeExport('@flue/runtime/cloudflare', ['flue-source', 'workerd'])).toBe(
      path.join(root, 'src/durable-objects/index.ts'),
    );
  });

  it('names the available entries for an unexported subpath', () => {
    expect(() => resolveRuntimeExport('@flue/runtime/internal', ['import'])).toThrow(
      /^\[flue\] "@flue\/runtime\/internal" is not exported by @flue\/runtime\. Available: @flue\/runtime, @flue\/runtime\/tool, @flue\/runtime\/routing, @flue\/runtime\/node/,
    );
  });
});
