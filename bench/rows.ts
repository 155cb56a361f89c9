/**
 * The figures a benchmark reports, and how they travel: Node benchmarks save them (results.ts);
 * the workerd benchmark cannot write files, so it prints them on one marked line that
 * `bench/run.ts` picks out of its output. No node:* imports, so this also loads inside workerd.
 */

export interface BenchRow {
  figure: string;
  /** Our figure, formatted with its unit ("14.2 ms", "3 rows"). */
  ours: string;
  /** The baseline measured in the same run, formatted with its unit. */
  baseline: string;
  /** ours / baseline, or another comparison the target is stated in. */
  ratio: string;
  /** '—' for a figure without a target (context, such as a line of the bill): its `met` is not shown. */
  target: string;
  met: boolean;
  /** What the baseline is, where the figure does not say (e.g. "floor: pi-ai alone"). */
  note?: string;
}

export const ROWS_MARKER = '@@flue-bench-rows ';

/** Prints `rows` on one marked line for `bench/run.ts` to save. */
export function emitRows(group: string, method: string, rows: BenchRow[]): void {
  console.log(`${ROWS_MARKER}${JSON.stringify({ group, method, rows })}`);
}

export function markdownTable(rows: BenchRow[]): string {
  const lines = ['| figure | ours | baseline | ratio | target | met? |', '| --- | --- | --- | --- | --- | --- |'];
  for (const row of rows) {
    const baseline = row.note ? `${row.baseline} (${row.note})` : row.baseline;
    const met = row.target === '—' ? '—' : row.met ? 'yes' : '**no**';
    lines.push(`| ${row.figure} | ${row.ours} | ${baseline} | ${row.ratio} | ${row.target} | ${met} |`);
  }
  return lines.join('\n');
}

export function median(values: number[]): number {
  if (values.length === 0) throw new Error('median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
