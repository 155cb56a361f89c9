/**
 * What a row of the log costs in pages. The log (`flue_batches`) is a WITHOUT ROWID table, whose
 * rows SQLite keeps in their b-tree page only up to 1,002 bytes with the 4 KiB pages of Node's
 * SQLite and of Durable Objects alike. A longer row keeps part of itself in the page and the rest
 * in overflow pages of 4,092 bytes each: one byte over a boundary costs a whole page of storage.
 */
import { utf8Size } from '../common/limits.ts';

const PAGE_BYTES = 4096;
/** The most of a row an index b-tree page holds: (usable − 12) × 64 / 255 − 23. */
const MAX_LOCAL = Math.floor(((PAGE_BYTES - 12) * 64) / 255) - 23;
/** What a row that overflows keeps in its page, at the least: (usable − 12) × 32 / 255 − 23. */
const MIN_LOCAL = Math.floor(((PAGE_BYTES - 12) * 32) / 255) - 23;
/** What one overflow page holds (its first 4 bytes point to the next). */
const OVERFLOW_BYTES = PAGE_BYTES - 4;

/** The overflow pages a row of `payload` bytes takes (SQLite's rule for index b-tree cells). */
export function overflowPages(payload: number): number {
  if (payload <= MAX_LOCAL) return 0;
  let local = MIN_LOCAL + ((payload - MIN_LOCAL) % OVERFLOW_BYTES);
  if (local > MAX_LOCAL) local = MIN_LOCAL;
  return Math.ceil((payload - local) / OVERFLOW_BYTES);
}

/** A log row's payload: its record header, its key (`stream`, `seq`) and its records' text. */
export function logRowPayload(stream: string, seq: number, textBytes: number): number {
  const streamBytes = utf8Size(stream);
  // SQLite stores the integers 0 and 1 in the header alone; the rest in 1, 2, 3 or 4 bytes.
  const seqBytes = seq <= 1 ? 0 : seq < 128 ? 1 : seq < 32_768 ? 2 : seq < 8_388_608 ? 3 : 4;
  const varint = (n: number) => (n < 128 ? 1 : n < 16_384 ? 2 : 3);
  const header = 1 + varint(streamBytes * 2 + 13) + 1 + varint(textBytes * 2 + 13);
  return header + streamBytes + seqBytes + textBytes;
}
