import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { logRowPayload, overflowPages } from './inline-rows.ts';

const STREAM = 'agents/Agent/a1';

/**
 * The pages a WITHOUT ROWID table of `rows` rows of `text` takes, as SQLite counts them: one
 * stream's batches 1, 2, …, or with `seq`, that batch of as many streams (each name as long as `STREAM`).
 */
function pagesFor(text: string, rows: number, seq?: number): number {
  const db = new DatabaseSync(':memory:');
  db.exec('CREATE TABLE t (stream TEXT NOT NULL, seq INTEGER NOT NULL, records TEXT NOT NULL, PRIMARY KEY (stream, seq)) WITHOUT ROWID');
  const before = (db.prepare('PRAGMA page_count').get() as { page_count: number }).page_count;
  const insert = db.prepare('INSERT INTO t VALUES (?, ?, ?)');
  for (let row = 1; row <= rows; row++) {
    if (seq === undefined) insert.run(STREAM, row, text);
    else insert.run(`agents/Agent/${String(row).padStart(2, '0')}`, seq, text);
  }
  return (db.prepare('PRAGMA page_count').get() as { page_count: number }).page_count - before;
}

describe('the pages of a log row', () => {
  it('no overflow up to the local limit, then one page per 4,092 bytes beyond what stays local', () => {
    expect(overflowPages(1002)).toBe(0);
    expect(overflowPages(1003)).toBe(1);
    expect(overflowPages(489 + 4092)).toBe(1);
    expect(overflowPages(489 + 4092 + 513)).toBe(1);
    expect(overflowPages(489 + 4092 + 514)).toBe(2);
    expect(overflowPages(20_000)).toBe(5);
  });

  it.each([300, 900, 960, 1_000, 1_100, 2_000, 4_500, 9_000])(
    'agrees with SQLite: 40 rows of %i bytes of text take the pages the rule says',
    (size) => {
      const text = 'x'.repeat(size);
      const payload = logRowPayload(STREAM, 40, size);
      const overflow = overflowPages(payload) * 40;
      const pages = pagesFor(text, 40);
      // The leaf pages hold the local parts; the rest is exactly the overflow pages the rule counts.
      expect(pages).toBeGreaterThanOrEqual(overflow);
      expect(pages - overflow).toBeLessThanOrEqual(Math.ceil((40 * Math.min(payload, 1002)) / 3000) + 1);
    },
  );

  // Batches 0 and 1 store their seq in no bytes, 2–127 in one, then two, three, four.
  it.each([undefined, 0, 1, 127, 128, 40_000])(
    'a row one byte past the limit takes about a page more than one at it (less the leaf space its smaller local part frees): seq %s',
    (seq) => {
      let limit = 0;
      while (logRowPayload(STREAM, seq ?? 40, limit + 1) <= 1002) limit++;
      expect(pagesFor('x'.repeat(limit), 40, seq)).toBeLessThanOrEqual(12);
      expect(pagesFor('x'.repeat(limit + 1), 40, seq) - pagesFor('x'.repeat(limit), 40, seq)).toBeGreaterThanOrEqual(30);
    },
  );
});
