/** decodeSourceMap(): lookups in real esbuild maps, 1-based in and out. */
import { describe, expect, it } from 'vitest';
import * as esbuild from 'esbuild';
import { decodeSourceMap } from './source-map.ts';

/** The 1-based line and column of `needle` in `text`. */
function positionOf(text: string, needle: string): { line: number; column: number } {
  const index = text.indexOf(needle);
  if (index < 0) throw new Error(`"${needle}" not found`);
  const before = text.slice(0, index).split('\n');
  return { line: before.length, column: before.at(-1)!.length + 1 };
}

describe('decodeSourceMap', () => {
  it('maps a generated position back to its source line and column', async () => {
    const source = [
      'type Row = { id: string };',
      'const rows: Row[] = [];',
      '',
      'export function lookup(id: string): Row {',
      '  const found = rows.find((row) => row.id === id);',
      '  if (!found) throw new TypeError(`no row ${id}`);',
      '  return found;',
      '}',
    ].join('\n');
    const out = await esbuild.transform(source, { loader: 'ts', sourcemap: 'external', sourcefile: 'src/agents/rows.ts', minify: true });
    const map = JSON.parse(out.map) as { sources: string[]; mappings: string };
    const generated = positionOf(out.code, 'throw');
    const decoded = decodeSourceMap(map);
    expect(decoded.lookup(generated.line, generated.column)).toEqual({ file: 'src/agents/rows.ts', ...positionOf(source, 'throw') });
  });

  it('answers undefined for unmapped lines and columns before the first segment', () => {
    // Line 1: "AAAA" maps column 0 to source 0 line 0 column 0; line 2 is empty; line 3 starts at column 4.
    const decoded = decodeSourceMap({ sources: ['src/a.ts'], mappings: 'AAAA;;IACA' });
    expect(decoded.lookup(1, 1)).toEqual({ file: 'src/a.ts', line: 1, column: 1 });
    expect(decoded.lookup(1, 40)).toEqual({ file: 'src/a.ts', line: 1, column: 1 });
    expect(decoded.lookup(2, 1)).toBeUndefined();
    expect(decoded.lookup(3, 4)).toBeUndefined();
    expect(decoded.lookup(3, 5)).toEqual({ file: 'src/a.ts', line: 2, column: 1 });
    expect(decoded.lookup(9, 1)).toBeUndefined();
  });

  it('rejects a malformed mappings string', () => {
    expect(() => decodeSourceMap({ sources: [], mappings: 'A!AA' })).toThrow(
      '[flue] Malformed source map: unexpected character "!" in mappings.',
    );
  });
});
