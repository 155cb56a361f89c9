import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { logRowPayload, overflowPages, rowidLogRowPayload } from './inline-rows.ts';

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

describe('the pages of a format-1 log row (WITHOUT ROWID)', () => {
  it('no overflow up to the local limit, then one page per 4,092 bytes beyond what stays local', () => {
    expect(overflowPages(1002, 'index')).toBe(0);
    expect(overflowPages(1003, 'index')).toBe(1);
    expect(overflowPages(489 + 4092, 'index')).toBe(1);
    expect(overflowPages(489 + 4092 + 513, 'index')).toBe(1);
    expect(overflowPages(489 + 4092 + 514, 'index')).toBe(2);
    expect(overflowPages(20_000, 'index')).toBe(5);
  });

  it.each([300, 900, 960, 1_000, 1_100, 2_000, 4_500, 9_000])(
    'agrees with SQLite: 40 rows of %i bytes of text take the pages the rule says',
    (size) => {
      const text = 'x'.repeat(size);
      const payload = logRowPayload(STREAM, 40, size);
      const overflow = overflowPages(payload, 'index') * 40;
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

/** The pages a rowid log (format 2) of `rows` rows of `text` takes, and how many of them are overflow pages, as SQLite counts them. */
function rowidPagesFor(text: string, rows: number): { pages: number; overflow: number } {
  const db = new DatabaseSync(':memory:');
  db.exec('CREATE TABLE t (pos INTEGER PRIMARY KEY, records TEXT NOT NULL)');
  const insert = db.prepare('INSERT INTO t (pos, records) VALUES ((1 << 32) + ?, ?)');
  for (let row = 1; row <= rows; row++) insert.run(row, text);
  const count = (where: string) => Number(db.prepare(`SELECT count(*) AS n FROM dbstat WHERE name = 't'${where}`).get()!.n);
  return { pages: count(''), overflow: count(` AND pagetype = 'overflow'`) };
}

describe('the pages of a format-2 log row (a rowid table)', () => {
  it('keeps up to 4,061 bytes of a row in its page', () => {
    expect(overflowPages(4061, 'table')).toBe(0);
    expect(overflowPages(4062, 'table')).toBe(1);
    expect(overflowPages(20_000, 'table')).toBe(4);
    expect(rowidLogRowPayload(100)).toBe(104);
    expect(rowidLogRowPayload(4_000)).toBe(4_004);
    // The longest text that stays in the page, and one byte more.
    expect(overflowPages(rowidLogRowPayload(4_057), 'table')).toBe(0);
    expect(overflowPages(rowidLogRowPayload(4_058), 'table')).toBe(1);
  });

  it.each([300, 1_100, 2_000, 4_057, 4_058, 9_000])(
    'agrees with SQLite: 20 rows of %i bytes of text take the overflow pages the rule says',
    (size) => {
      expect(rowidPagesFor('x'.repeat(size), 20).overflow).toBe(overflowPages(rowidLogRowPayload(size), 'table') * 20);
    },
  );

  it('where a format-1 row of 1,150 bytes spills into a page of its own, a format-2 row stays in its page', () => {
    expect(overflowPages(logRowPayload(STREAM, 40, 1_150), 'index')).toBe(1);
    expect(overflowPages(rowidLogRowPayload(1_150), 'table')).toBe(0);
    expect(rowidPagesFor('x'.repeat(1_150), 20).pages).toBeLessThan(pagesFor('x'.repeat(1_150), 20) / 2);
  });
});
