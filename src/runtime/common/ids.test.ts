import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createUlidGenerator, decodeUlidTime, deepEqualJson, keyedSubmissionId, newId, sha256Hex, stableJson, ulid } from './ids.ts';

const ULID = /^[0-9ABCDEFGHJKMNPQRSTVWXYZ]{26}$/;

describe('ulid', () => {
  it('is 26 Crockford base32 characters', () => {
    for (let i = 0; i < 100; i++) expect(ulid()).toMatch(ULID);
  });

  it('encodes the millisecond timestamp in the first 10 characters', () => {
    const next = createUlidGenerator(() => 1_700_000_000_123);
    const id = next();
    expect(decodeUlidTime(id)).toBe(1_700_000_000_123);
    expect(createUlidGenerator(() => 0)().slice(0, 10)).toBe('0000000000');
    expect(createUlidGenerator(() => 2 ** 48 - 1)().slice(0, 10)).toBe('7ZZZZZZZZZ');
  });

  it('is strictly increasing within one millisecond', () => {
    const next = createUlidGenerator(() => 1_000);
    const ids = Array.from({ length: 5_000 }, () => next());
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => decodeUlidTime(id) === 1_000)).toBe(true);
  });

  it('stays increasing when the clock goes backwards', () => {
    const times = [5_000, 5_000, 4_000, 6_000, 6_000];
    const next = createUlidGenerator(() => times.shift()!);
    const ids = Array.from({ length: 5 }, () => next());
    expect([...ids].sort()).toEqual(ids);
    expect(decodeUlidTime(ids[2]!)).toBe(5_000);
    expect(decodeUlidTime(ids[3]!)).toBe(6_000);
  });

  it('borrows the next millisecond when the random part overflows', () => {
    const next = createUlidGenerator(
      () => 9_000,
      (bytes) => bytes.fill(0xff),
    );
    const first = next();
    expect(first.slice(10)).toBe('Z'.repeat(16));
    const second = next();
    expect(decodeUlidTime(second)).toBe(9_001);
    expect(second > first).toBe(true);
  });

  it('sorts lexicographically by creation time across milliseconds', () => {
    let clock = 10_000;
    const next = createUlidGenerator(() => (clock += 7));
    const ids = Array.from({ length: 200 }, () => next());
    expect([...ids].sort()).toEqual(ids);
  });

  it('the shared generator is monotonic across a tight loop', () => {
    const ids = Array.from({ length: 2_000 }, () => ulid());
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('keyedSubmissionId keeps HTTP keys apart: another preimage prefix, the dispatch format unchanged', async () => {
    const dispatched = await keyedSubmissionId('IssueTriage', 'order-42', 'approval:7', 'dispatch');
    const posted = await keyedSubmissionId('IssueTriage', 'order-42', 'approval:7', 'http');
    expect(dispatched).toBe(await keyedSubmissionId('IssueTriage', 'order-42', 'approval:7'));
    expect(posted).toBe(
      'sub_ik_' +
        createHash('sha256').update('flue-submission-key/http\nIssueTriage\norder-42\napproval:7', 'utf8').digest('hex').slice(0, 32),
    );
    expect(posted).not.toBe(dispatched);
    expect(await keyedSubmissionId('IssueTriage', 'order-42', 'approval:7', 'http')).toBe(posted);
  });
});

describe('newId', () => {
  it.each(['sub', 'inst', 'instance', 'attempt', 'conv', 'msg', 'inc', 'err', 'call', 'turn'] as const)('mints %s_<ULID>', (prefix) => {
    const id = newId(prefix);
    expect(id.startsWith(`${prefix}_`)).toBe(true);
    expect(id.slice(prefix.length + 1)).toMatch(ULID);
  });
});

describe('hashing', () => {
  it('sha256Hex matches node:crypto', async () => {
    for (const text of ['', 'abc', 'héllo 🌍\nline']) {
      expect(await sha256Hex(text)).toBe(createHash('sha256').update(text, 'utf8').digest('hex'));
    }
  });

  it('keyedSubmissionId follows the frozen format', async () => {
    const expected =
      'sub_ik_' + createHash('sha256').update('flue-submission-key\nIssueTriage\norder-42\napproval:7', 'utf8').digest('hex').slice(0, 32);
    const id = await keyedSubmissionId('IssueTriage', 'order-42', 'approval:7');
    expect(id).toBe(expected);
    expect(id).toMatch(/^sub_ik_[0-9a-f]{32}$/);
    expect(await keyedSubmissionId('IssueTriage', 'order-42', 'approval:7')).toBe(id);
  });

  it('keyedSubmissionId separates agent, id and key', async () => {
    const ids = await Promise.all([
      keyedSubmissionId('A', 'b', 'c'),
      keyedSubmissionId('A', 'b', 'd'),
      keyedSubmissionId('A', 'x', 'c'),
      keyedSubmissionId('B', 'b', 'c'),
      keyedSubmissionId('A', 'b\nc', ''),
    ]);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('stableJson / deepEqualJson', () => {
  it('sorts keys at every level', () => {
    expect(stableJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[1,{"y":2,"z":1}]},"b":1}');
    expect(deepEqualJson({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(true);
  });

  it('treats explicit undefined keys as absent', () => {
    expect(deepEqualJson({ kind: 'user', body: 'x', attachments: undefined }, { body: 'x', kind: 'user' })).toBe(true);
    expect(deepEqualJson({ a: { b: undefined } }, { a: {} })).toBe(true);
  });

  it('keeps null, absent and values distinct', () => {
    expect(deepEqualJson({ a: null }, {})).toBe(false);
    expect(deepEqualJson(undefined, null)).toBe(false);
    expect(deepEqualJson(undefined, undefined)).toBe(true);
    expect(stableJson(undefined)).toBeUndefined();
    expect(deepEqualJson([1, 2], [2, 1])).toBe(false);
    expect(deepEqualJson({ a: '1' }, { a: 1 })).toBe(false);
  });

  it('follows JSON.stringify for values JSON cannot hold', () => {
    expect(stableJson([undefined, () => 1, Number.NaN, Number.POSITIVE_INFINITY])).toBe('[null,null,null,null]');
    expect(stableJson({ d: new Date(0) })).toBe('{"d":"1970-01-01T00:00:00.000Z"}');
    expect(stableJson('a"b')).toBe('"a\\"b"');
    expect(() => stableJson(1n)).toThrowError(TypeError);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => stableJson(cyclic)).toThrowError(/circular/);
  });

  it('allows the same object twice when it is not a cycle', () => {
    const shared = { x: 1 };
    expect(stableJson({ a: shared, b: shared })).toBe('{"a":{"x":1},"b":{"x":1}}');
  });
});
