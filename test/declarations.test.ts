/**
 * The declarations `npm pack` publishes (scripts/build-types.mjs): every entry's `.d.ts` files
 * type-check with `skipLibCheck: false` against the globals of where the entry runs, and none of
 * them loads pi-ai's types or, for the Worker entries, Node's (which clash with the Workers
 * runtime's in a user's project). Their comments cite no document the package does not ship.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, test } from 'vitest';
import { buildTypes, checkCitations, checkDeclarations } from '../scripts/build-types.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
// Inside the checkout, so the check's tsc finds node_modules (the folder is gitignored).
mkdirSync(path.join(root, '.tmp-tests'), { recursive: true });
const scratch = mkdtempSync(path.join(root, '.tmp-tests', 'declarations-'));

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const WORKERS = { name: 'Workers', lib: ['ES2023'], types: ['@cloudflare/workers-types'] };

test('the emitted declarations pass the check: Worker entries against Workers globals alone, no pi-ai types anywhere', () => {
  // buildTypes runs checkDeclarations on what it emitted and throws on any problem.
  expect(() => buildTypes(path.join(scratch, 'emitted'))).not.toThrow();
}, 180_000);

test('the check fails an entry whose declarations import pi-ai', () => {
  const dir = path.join(scratch, 'pi-ai');
  mkdirSync(path.join(dir, 'runtime'), { recursive: true });
  writeFileSync(path.join(dir, 'runtime', 'index.d.ts'), "import type { Message } from '@earendil-works/pi-ai';\nexport type M = Message;\n");
  expect(() => checkDeclarations(dir, [{ ...WORKERS, entries: ['.'] }])).toThrow(/load pi-ai's types/);
}, 120_000);

test('the check fails a Worker entry whose declarations import a node: module', () => {
  const dir = path.join(scratch, 'node-import');
  mkdirSync(path.join(dir, 'runtime'), { recursive: true });
  writeFileSync(path.join(dir, 'runtime', 'index.d.ts'), "import type { Server } from 'node:http';\nexport type S = Server;\n");
  expect(() => checkDeclarations(dir, [{ ...WORKERS, entries: ['.'] }])).toThrow(/'node:http'|load Node's globals/);
}, 120_000);

test('the check fails a published comment that cites a document the package does not ship', () => {
  const dir = path.join(scratch, 'citations');
  mkdirSync(path.join(dir, 'runtime'), { recursive: true });
  const cited = [
    '/** Retried as tools.md §4 says. */',
    '/** See docs/limits.md. */',
    '/** The reply of one settled submission (seed 004). */',
    '/** Frozen (Decision 2). */',
  ];
  for (const line of cited) {
    writeFileSync(path.join(dir, 'runtime', 'index.d.ts'), `${line}\nexport declare const x: number;\n`);
    expect(() => checkCitations(dir), line).toThrow(/runtime\/index\.d\.ts:1 cites/);
  }
  // File formats and public specifications are not citations.
  writeFileSync(
    path.join(dir, 'runtime', 'index.d.ts'),
    '/** A `SKILL.md` import; AGENTS.md is read; RFC 6838 §4.2; runs `seed` once. */\nexport declare const x: number;\n',
  );
  expect(() => checkCitations(dir)).not.toThrow();
});
