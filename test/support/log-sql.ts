/**
 * Test support: a store's log as SQL rows `(stream, seq, records)`, for tests that read what a host
 * stored without the store. A format-2 store keeps its log in `flue_log`, one row per batch keyed by
 * `(log << 32) + seq`, where `flue_streams.log` numbers the conversation (src/runtime/store/log-table.ts).
 */
export const LOG_ROWS =
  '(SELECT s.stream AS stream, l.pos - (s.log << 32) AS seq, l.records AS records FROM flue_log AS l JOIN flue_streams AS s ON s.log = l.pos >> 32)';
