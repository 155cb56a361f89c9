/**
 * What a row of the log costs in pages, with the 4 KiB pages of Node's SQLite and of Durable
 * Objects alike. A row longer than its b-tree page allows keeps part of itself in the page and the
 * rest in overflow pages of 4,092 bytes each: one byte over a boundary costs a whole page of
 * storage. How much stays in the page depends on the table (SQLite's file format, "B-tree Pages"):
 * a WITHOUT ROWID table (an index b-tree: the format-1 log, `flue_batches`) keeps at most 1,002
 * bytes of a row, a rowid table (a table b-tree: the log of formats 2 and 3, `flue_log`) up to 4,061.
 */
import { utf8Size } from '../common/limits.ts';

const PAGE_BYTES = 4096;
/** What a row that overflows keeps in its page, at the least: (usable − 12) × 32 / 255 − 23. */
const MIN_LOCAL = Math.floor(((PAGE_BYTES - 12) * 32) / 255) - 23;
/** The most of a row a page holds: (usable − 12) × 64 / 255 − 23 in an index b-tree, usable − 35 in a table b-tree. */
const MAX_LOCAL = { index: Math.floor(((PAGE_BYTES - 12) * 64) / 255) - 23, table: PAGE_BYTES - 35 } as const;
/** What one overflow page holds (its first 4 bytes point to the next). */
const OVERFLOW_BYTES = PAGE_BYTES - 4;

/** The overflow pages a row of `payload` bytes takes in a b-tree of kind `tree` (SQLite's rule). */
export function overflowPages(payload: number, tree: keyof typeof MAX_LOCAL): number {
  const maxLocal = MAX_LOCAL[tree];
  if (payload <= maxLocal) return 0;
  let local = MIN_LOCAL + ((payload - MIN_LOCAL) % OVERFLOW_BYTES);
  if (local > maxLocal) local = MIN_LOCAL;
  return Math.ceil((payload - local) / OVERFLOW_BYTES);
}

const varint = (n: number) => (n < 128 ? 1 : n < 16_384 ? 2 : 3);

/** A `flue_log` row's payload (formats 2 and 3): its record header and its records' text (the key is the rowid, stored apart). */
export function rowidLogRowPayload(textBytes: number): number {
  // The header's size, `pos` (the rowid's alias, stored as NULL: a type byte alone), the text's type.
  return 1 + 1 + varint(textBytes * 2 + 13) + textBytes;
}

/** A format-1 log row's payload: its record header, its key (`stream`, `seq`) and its records' text. */
export function logRowPayload(stream: string, seq: number, textBytes: number): number {
  const streamBytes = utf8Size(stream);
  // SQLite stores the integers 0 and 1 in the header alone; the rest in 1, 2, 3 or 4 bytes.
  const seqBytes = seq <= 1 ? 0 : seq < 128 ? 1 : seq < 32_768 ? 2 : seq < 8_388_608 ? 3 : 4;
  const header = 1 + varint(streamBytes * 2 + 13) + 1 + varint(textBytes * 2 + 13);
  return header + streamBytes + seqBytes + textBytes;
}
