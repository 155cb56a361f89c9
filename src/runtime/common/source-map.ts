/**
 * Lookups in a version-3 source map's `mappings` (base64 VLQ), without a dependency: in dev mode
 * the Worker maps its own stack frames from `dist/worker.js` back to the user's `src/` files.
 * Lines and columns in and out are 1-based, as stack frames print them.
 */

export interface SourcePosition {
  file: string;
  line: number;
  column: number;
}

/** Per generated line, segments sorted by column: [generatedColumn, source, line, column] (0-based). */
type Segment = readonly [number, number, number, number];

export interface DecodedSourceMap {
  /** The original position of generated `line`:`column`, or undefined where nothing maps. */
  lookup(line: number, column: number): SourcePosition | undefined;
}

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const DIGIT = new Map([...BASE64].map((c, i) => [c, i]));

/** `sources` as the caller wants them shown (the dev server sends them relative to the project). */
export function decodeSourceMap(map: { sources: readonly string[]; mappings: string }): DecodedSourceMap {
  const lines = decodeMappings(map.mappings);
  return {
    lookup(line, column) {
      const segments = lines[line - 1];
      if (segments === undefined || segments.length === 0) return undefined;
      // The last segment starting at or before the column covers it.
      let lo = 0;
      let hi = segments.length - 1;
      if (segments[0]![0] > column - 1) return undefined;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (segments[mid]![0] <= column - 1) lo = mid;
        else hi = mid - 1;
      }
      const [, source, originalLine, originalColumn] = segments[lo]!;
      const file = map.sources[source];
      return file === undefined ? undefined : { file, line: originalLine + 1, column: originalColumn + 1 };
    },
  };
}

function decodeMappings(mappings: string): Segment[][] {
  const lines: Segment[][] = [];
  // Source, original line and original column are relative across the whole string; the
  // generated column restarts on every line.
  let source = 0;
  let originalLine = 0;
  let originalColumn = 0;
  for (const text of mappings.split(';')) {
    const segments: Segment[] = [];
    let generatedColumn = 0;
    for (const field of text.split(',')) {
      if (field === '') continue;
      const values = decodeVlq(field);
      generatedColumn += values[0]!;
      // One-field segments map to nothing; keep only the ones with a source position.
      if (values.length < 4) continue;
      source += values[1]!;
      originalLine += values[2]!;
      originalColumn += values[3]!;
      segments.push([generatedColumn, source, originalLine, originalColumn]);
    }
    lines.push(segments);
  }
  return lines;
}

function decodeVlq(field: string): number[] {
  const values: number[] = [];
  let value = 0;
  let shift = 0;
  for (const char of field) {
    const digit = DIGIT.get(char);
    if (digit === undefined) throw new Error(`[flue] Malformed source map: unexpected character "${char}" in mappings.`);
    value += (digit & 31) * 2 ** shift;
    if (digit & 32) {
      shift += 5;
      continue;
    }
    values.push(value & 1 ? -(value - 1) / 2 : value / 2);
    value = 0;
    shift = 0;
  }
  return values;
}
