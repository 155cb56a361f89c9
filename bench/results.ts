/**
 * One place where benchmarks leave their figures, so `npm run bench` can end with one table.
 *
 * Each benchmark calls `saveRows(group, rows)` once; `bench/report.ts` prints every group saved in
 * this run. Files live in `bench/.results/` (git-ignored) and are overwritten on each run.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface BenchRow {
  figure: string;
  /** Our figure, formatted with its unit ("14.2 ms", "3 rows"). */
  ours: string;
  /** The baseline measured in the same run, formatted with its unit. */
  baseline: string;
  /** ours / baseline, or another comparison the target is stated in. */
  ratio: string;
  target: string;
  met: boolean;
  /** What the baseline is, where the figure does not say (e.g. "floor: pi-ai alone"). */
  note?: string;
}

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

export function markdownTable(rows: BenchRow[]): string {
  const lines = ['| figure | ours | baseline | ratio | target | met? |', '| --- | --- | --- | --- | --- | --- |'];
  for (const row of rows) {
    const baseline = row.note ? `${row.baseline} (${row.note})` : row.baseline;
    lines.push(`| ${row.figure} | ${row.ours} | ${baseline} | ${row.ratio} | ${row.target} | ${row.met ? 'yes' : '**no**'} |`);
  }
  return lines.join('\n');
}

export function median(values: number[]): number {
  if (values.length === 0) throw new Error('median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
