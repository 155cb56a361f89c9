/**
 * One place where benchmarks leave their figures, so `npm run bench` can end with one table.
 *
 * Each benchmark calls `saveRows(group, rows)` once; `bench/report.ts` prints every group saved in
 * this run. Files live in `bench/.results/` (git-ignored) and are overwritten on each run.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchRow } from './rows.ts';

export { type BenchRow, markdownTable, median } from './rows.ts';

export interface BenchGroup {
  group: string;
  /** How and where it was measured ("Node 22, median of 5 runs", "workerd via vitest-plugin"). */
  method: string;
  rows: BenchRow[];
  savedAt: string;
}

export const resultsDir = join(dirname(fileURLToPath(import.meta.url)), '.results');

export function saveRows(group: string, method: string, rows: BenchRow[]): void {
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `${group.replace(/[^A-Za-z0-9_-]+/g, '-')}.json`);
  const saved: BenchGroup = { group, method, rows, savedAt: new Date().toISOString() };
  writeFileSync(file, JSON.stringify(saved, null, 2));
}

export function loadGroups(): BenchGroup[] {
  let files: string[];
  try {
    files = readdirSync(resultsDir).filter((name) => name.endsWith('.json'));
  } catch {
    return [];
  }
  return files.sort().map((name) => JSON.parse(readFileSync(join(resultsDir, name), 'utf8')) as BenchGroup);
}
