import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageRoot, resolveRuntimeExport, runtimeSubpath } from './package-root.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('package root and @flue/runtime exports', () => {
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
    expect(resolveRuntimeExport('@flue/runtime', ['import'])).toBe(path.join(root, 'src/runtime/index.ts'));
    // Plain Node gets the built JavaScript; `flue-source` (tests) and Workers get the sources.
    expect(resolveRuntimeExport('@flue/runtime/node', ['node', 'import'])).toBe(path.join(root, 'dist/node/node.js'));
    expect(resolveRuntimeExport('@flue/runtime/node', ['flue-source', 'node', 'import'])).toBe(path.join(root, 'src/node/index.ts'));
    expect(resolveRuntimeExport('@flue/runtime/node', ['workerd', 'worker', 'browser', 'import', 'default'])).toBe(path.join(root, 'src/node/index.ts'));
    expect(resolveRuntimeExport('@flue/runtime/tool', ['workerd'])).toBe(path.join(root, 'src/runtime/tool-entry.ts'));
  });

  it('names the available entries for an unexported subpath', () => {
    expect(() => resolveRuntimeExport('@flue/runtime/internal', ['import'])).toThrow(
      /^\[flue\] "@flue\/runtime\/internal" is not exported by @flue\/runtime\. Available: @flue\/runtime, @flue\/runtime\/tool, @flue\/runtime\/routing, @flue\/runtime\/node/,
    );
  });
});
