// The bench's price arithmetic (bench/pricing.ts): a turn's meters in, dollars per million turns out.
import { describe, expect, test } from 'vitest';
import { type TurnUsage, billPerMillionTurns, billTotal, dollars, dominantLine } from '../bench/pricing.ts';

const none: TurnUsage = {
  workerRequests: 0,
  workerCpuMs: 0,
  objectRequests: 0,
  objectAwakeMs: 0,
  rowsRead: 0,
  rowsWritten: 0,
  bytesStored: 0,
};

describe('billPerMillionTurns', () => {
  test('each meter is priced at its published rate, per million turns', () => {
    const bill = billPerMillionTurns({
      workerRequests: 1,
      workerCpuMs: 25,
      objectRequests: 3,
      objectAwakeMs: 10_000,
      rowsRead: 1_000,
      rowsWritten: 6,
      bytesStored: 2_500,
    });
    expect(bill['Workers requests']).toBeCloseTo(0.3, 10);
    expect(bill['Workers CPU']).toBeCloseTo(0.5, 10); // 25 million CPU ms at $0.02 a million
    expect(bill['DO requests']).toBeCloseTo(0.45, 10);
    // 10 s × 128 MB = 1.25 GB-s a turn; 1.25 million GB-s at $12.50 a million.
    expect(bill['DO duration']).toBeCloseTo(15.625, 10);
    expect(bill['rows read']).toBeCloseTo(1, 10); // a billion rows at $0.001 a million
    expect(bill['rows written']).toBeCloseTo(6, 10);
    // 2.5 GB kept a month at $0.20.
    expect(bill['storage (per month kept)']).toBeCloseTo(0.5, 10);
    expect(billTotal(bill)).toBeCloseTo(24.375, 10);
  });

  test('a turn that uses nothing costs nothing', () => {
    expect(billTotal(billPerMillionTurns(none))).toBe(0);
  });
});

describe('dominantLine', () => {
  test('names the costliest line and its share of the total', () => {
    const instant = dominantLine(billPerMillionTurns({ ...none, workerRequests: 1, rowsWritten: 5, objectAwakeMs: 50 }));
    expect(instant.line).toBe('rows written');
    expect(instant.share).toBeCloseTo(5 / (0.3 + 5 + 0.078125), 10);
    const streamed = dominantLine(billPerMillionTurns({ ...none, workerRequests: 1, rowsWritten: 5, objectAwakeMs: 10_050 }));
    expect(streamed.line).toBe('DO duration');
  });
});

test('dollars keeps the small lines readable', () => {
  expect(dollars(15.625)).toBe('$15.63');
  expect(dollars(0.45)).toBe('$0.450');
  expect(dollars(0.0012)).toBe('$0.0012');
});
