/**
 * Where this package (`@flue/runtime`) lives on disk, and how its `exports` map resolves.
 *
 * The build resolves every `@flue/runtime` / `@flue/runtime/*` import of a project to the files of
 * the package the CLI itself runs from, so a project anywhere bundles exactly one copy
 * (build-and-cli.md §3.3; module-scoped registries must not be split).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FlueBuildError } from './build-errors.ts';

/** The specifier projects import (`"@flue/runtime": "npm:flue-workers@…"` in their package.json). */
export const PACKAGE_NAME = '@flue/runtime';
/** The name this package is published under, as its own package.json says. */
export const PUBLISHED_NAME = 'flue-workers';

interface PackageJson {
  name?: string;
  version?: string;
  exports?: unknown;
}

let cachedRoot: string | undefined;

/**
 * The directory of the nearest `package.json` named `flue-workers` above this file: the checkout,
 * or the installed package (which a project's alias places at node_modules/@flue/runtime).
 */
export function packageRoot(): string {
  if (cachedRoot !== undefined) return cachedRoot;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      const json = JSON.parse(readFileSync(file, 'utf8')) as PackageJson;
      if (json.name === PUBLISHED_NAME) return (cachedRoot = dir);
    }
    const parent = path.dirname(dir);
    if (parent === dir)
      throw new FlueBuildError(
        'PackageResolutionError',
        `Could not locate the ${PUBLISHED_NAME} package root from ${fileURLToPath(import.meta.url)}.`,
      );
    dir = parent;
  }
}

export function packageJson(): PackageJson {
  return JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as PackageJson;
}

export function packageVersion(): string {
  return packageJson().version ?? '0.0.0';
}

/** `@flue/runtime` → `.`, `@flue/runtime/node` → `./node`; anything else → undefined. */
export function runtimeSubpath(specifier: string): string | undefined {
  if (specifier === PACKAGE_NAME) return '.';
  if (specifier.startsWith(`${PACKAGE_NAME}/`)) return `./${specifier.slice(PACKAGE_NAME.length + 1)}`;
  return undefined;
}

function pickTarget(target: unknown, conditions: readonly string[]): string | undefined {
  if (typeof target === 'string') return target;
  if (Array.isArray(target)) {
    for (const item of target) {
      const hit = pickTarget(item, conditions);
      if (hit !== undefined) return hit;
    }
    return undefined;
  }
  if (typeof target === 'object' && target !== null) {
    // Conditions are matched in the object's own key order, as Node does.
    for (const [key, value] of Object.entries(target)) {
      if (key === 'default' || conditions.includes(key)) {
        const hit = pickTarget(value, conditions);
        if (hit !== undefined) return hit;
      }
    }
  }
  return undefined;
}

/**
 * Resolves `@flue/runtime[/sub]` through this package's `exports` map to an absolute file.
 * Supports exact subpaths and single-`*` patterns. Throws a `[flue]` error when not exported.
 */
export function resolveRuntimeExport(specifier: string, conditions: readonly string[]): string {
  const subpath = runtimeSubpath(specifier);
  if (subpath === undefined) throw new FlueBuildError('PackageResolutionError', `${specifier} is not a ${PACKAGE_NAME} specifier.`);
  const exportsField = packageJson().exports;
  let map: Record<string, unknown>;
  if (typeof exportsField === 'string' || Array.isArray(exportsField)) map = { '.': exportsField };
  else if (typeof exportsField === 'object' && exportsField !== null) {
    const keys = Object.keys(exportsField);
    map = keys.length > 0 && keys.every((k) => !k.startsWith('.')) ? { '.': exportsField } : (exportsField as Record<string, unknown>);
  } else map = {};

  let target: string | undefined;
  if (Object.hasOwn(map, subpath)) target = pickTarget(map[subpath], conditions);
  else {
    for (const [key, value] of Object.entries(map)) {
      const star = key.indexOf('*');
      if (star === -1) continue;
      const prefix = key.slice(0, star);
      const suffix = key.slice(star + 1);
      if (subpath.startsWith(prefix) && subpath.endsWith(suffix) && subpath.length >= key.length - 1) {
        const match = subpath.slice(prefix.length, subpath.length - suffix.length);
        const picked = pickTarget(value, conditions);
        if (picked !== undefined) target = picked.replaceAll('*', match);
        break;
      }
    }
  }
  if (target === undefined) {
    const available = Object.keys(map)
      .map((k) => (k === '.' ? PACKAGE_NAME : `${PACKAGE_NAME}/${k.slice(2)}`))
      .join(', ');
    throw new FlueBuildError('PackageResolutionError', `"${specifier}" is not exported by ${PACKAGE_NAME}. Available: ${available}.`);
  }
  const file = path.resolve(packageRoot(), target);
  if (!existsSync(file)) throw new FlueBuildError('PackageResolutionError', `"${specifier}" maps to ${file}, which does not exist.`);
  return file;
}
