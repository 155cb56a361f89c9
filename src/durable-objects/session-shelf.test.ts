import { describe, expect, it } from 'vitest';
import { SessionShelf } from './session-shelf.ts';

describe('SessionShelf', () => {
  it('gives a kept session to the first take of its key only', () => {
    const shelf = new SessionShelf<object, string>(10_000, () => {});
    const receipt = {};
    shelf.keep(receipt, 's1', 0);
    expect(shelf.take({})).toBeUndefined();
    expect(shelf.take(receipt)).toBe('s1');
    expect(shelf.take(receipt)).toBeUndefined();
  });

  it('lets go of sessions unread for the bound when the next one is kept, and never of a taken one', () => {
    const letGo: string[] = [];
    const shelf = new SessionShelf<object, string>(10_000, (session) => letGo.push(session));
    const [a, b, c, d] = [{}, {}, {}, {}];
    shelf.keep(a, 'a', 0);
    shelf.keep(b, 'b', 1_000);
    shelf.keep(c, 'c', 2_000);
    expect(shelf.take(b)).toBe('b');
    shelf.keep(d, 'd', 9_999);
    expect(letGo).toEqual([]);
    shelf.keep({}, 'e', 11_500);
    expect(letGo).toEqual(['a']);
    expect(shelf.take(a)).toBeUndefined();
    expect(shelf.take(c)).toBe('c');
    shelf.keep({}, 'f', 30_000);
    expect(letGo).toEqual(['a', 'd', 'e']);
  });

  it('under steady traffic lets each unread session go once, in order, and keeps the rest takeable', () => {
    const letGo: number[] = [];
    const shelf = new SessionShelf<object, number>(10_000, (session) => letGo.push(session));
    const receipts = Array.from({ length: 1_000 }, () => ({}));
    // One keep every 100 ms: from the 101st on, each keep lets the oldest unread one go.
    receipts.forEach((receipt, i) => shelf.keep(receipt, i, i * 100));
    expect(letGo).toEqual(Array.from({ length: 900 }, (_, i) => i));
    expect(shelf.take(receipts[899]!)).toBeUndefined();
    expect(shelf.take(receipts[900]!)).toBe(900);
    expect(shelf.take(receipts[999]!)).toBe(999);
    shelf.keep({}, -1, 200_000);
    expect(letGo).toEqual([...Array.from({ length: 900 }, (_, i) => i), ...Array.from({ length: 98 }, (_, i) => 901 + i)]);
  });
});
