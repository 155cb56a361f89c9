import { describe, expect, it } from 'vitest';
import { PARTS_MARKER, parsePartsColumn, partsColumn, restoreValue, takeLargeStrings } from './value-parts.ts';

const large = (text: string) => text.length >= 5;

describe('values with their large strings apart', () => {
  it('takes the large strings out with their paths, copies only the containers on those paths, and puts them back', () => {
    const shared = { small: ['a', 'b'], n: 1, none: null };
    const value = [{ type: 'm', body: 'hello world', shared }, { list: ['xy', 'abcdef', { deep: 'ghijkl' }] }, 'top-level'];
    const before = JSON.stringify(value);
    const { skeleton, taken } = takeLargeStrings(value, large);
    expect(taken).toEqual([
      { path: [0, 'body'], text: 'hello world' },
      { path: [1, 'list', 1], text: 'abcdef' },
      { path: [1, 'list', 2, 'deep'], text: 'ghijkl' },
      { path: [2], text: 'top-level' },
    ]);
    expect(JSON.stringify(value)).toBe(before);
    expect((skeleton as { shared: unknown }[])[0]!.shared).toBe(shared);
    const parsed = JSON.parse(JSON.stringify(skeleton)) as unknown;
    expect(restoreValue(parsed, taken)).toEqual({ value });
    expect(JSON.stringify(restoreValue(JSON.parse(JSON.stringify(skeleton)), taken).value)).toBe(before);
  });

  it('leaves a value without large strings as it is, and a whole string value is its own part', () => {
    const value = { a: ['x'], b: 2 };
    expect(takeLargeStrings(value, large)).toEqual({ skeleton: value, taken: [] });
    expect(takeLargeStrings(value, large).skeleton).toBe(value);
    const whole = takeLargeStrings('a long string', large);
    expect(whole).toEqual({ skeleton: '', taken: [{ path: [], text: 'a long string' }] });
    expect(restoreValue('', whole.taken)).toEqual({ value: 'a long string' });
  });

  it('walks the keys JSON takes: own ones, not those a prototype lends', () => {
    const value = Object.assign(Object.create({ lent: 'inherited text' }) as Record<string, unknown>, { own: 'own long text' });
    expect(takeLargeStrings(value, large).taken).toEqual([{ path: ['own'], text: 'own long text' }]);
    const lentOnly = Object.create({ lent: 'inherited text' }) as Record<string, unknown>;
    expect(takeLargeStrings({ lentOnly }, large).taken).toEqual([]);
  });

  it('leaves an object with a toJSON whole: JSON, not its fields, decides what it becomes', () => {
    const dated = { at: 'a long field', toJSON: () => 'x' };
    expect(takeLargeStrings({ dated }, large)).toEqual({ skeleton: { dated }, taken: [] });
    expect(takeLargeStrings([dated, 'long enough'], large).taken).toEqual([{ path: [1], text: 'long enough' }]);
  });

  it('reports a part whose path does not end at a placeholder instead of placing it', () => {
    expect(restoreValue({ a: 'x' }, [{ path: ['a'], text: 'long text' }]).misplaced).toEqual(['a']);
    expect(restoreValue({ a: {} }, [{ path: ['a', 'b', 'c'], text: 'long text' }]).misplaced).toEqual(['a', 'b', 'c']);
    expect(restoreValue({ a: '' }, [{ path: [], text: 'long text' }]).misplaced).toEqual([]);
  });

  it('round-trips its column, which a version reading only whole spills takes for a spill with no chunk count', () => {
    const parts = [{ path: [0, 'body'], key: '["batch","s",3,0,"body"]', chunks: 20, bytes: 20_000_000 }];
    const column = partsColumn(parts, '[{"body":""}]');
    expect(column.startsWith(PARTS_MARKER)).toBe(true);
    expect(parsePartsColumn(column)).toEqual({ parts, skeletonText: '[{"body":""}]' });
    expect(parsePartsColumn('[{"body":"x"}]')).toBeUndefined();
    expect(parsePartsColumn('~spill:3:["batch","s",3]')).toBeUndefined();
    // What a whole-spill reader does with it: the count before the second colon is not a number.
    const rest = column.slice('~spill:'.length);
    expect(Number(rest.slice(0, rest.indexOf(':')))).toBeNaN();
    expect(rest.slice(rest.indexOf(':') + 1)).toMatch(/^\(a value stored with its large strings apart; versions of flue-workers before/);
  });

  it('refuses a malformed column with a reason', () => {
    expect(() => parsePartsColumn(`${PARTS_MARKER}note`)).toThrow(/no parts list/);
    expect(() => parsePartsColumn(`${PARTS_MARKER}note\n{}\n[]`)).toThrow(/not a list/);
    expect(() => parsePartsColumn(`${PARTS_MARKER}note\n[["x"]]\n[]`)).toThrow(/malformed entry/);
  });
});
