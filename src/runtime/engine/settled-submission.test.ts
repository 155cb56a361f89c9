import { describe, expect, it } from 'vitest';
import { emptyUsage } from '../model/usage.ts';
import { type StoredSettlement, decodeSettlement, encodeSettlement, ledgerOrder } from './settled-submission.ts';

const joined: StoredSettlement = {
  seq: 7,
  index: 3,
  outcome: 'completed',
  answeredBySubmissionId: 'sub_lead',
  usage: { usage: emptyUsage(), modelCalls: 0, toolCalls: 0, attempts: 0 },
  reply: { of: 'sub_lead', after: 1 },
};

describe('stored settlements', () => {
  it('leaves a ledger entry that spent nothing out of the text and restores it', () => {
    const text = encodeSettlement(joined);
    expect(JSON.parse(text)).not.toHaveProperty('usage');
    expect(text.length).toBeLessThan(JSON.stringify(joined).length / 2 + 40);
    expect(decodeSettlement(text)).toEqual(joined);
  });

  it('keeps every entry that spent something, or says more than the zero entry, as it is', () => {
    const spent = { ...joined, usage: { ...joined.usage, attempts: 1 } };
    const cloudflare = { ...joined, usage: { ...joined.usage, durableObject: { rowsWritten: 0, alarmsSet: 0, rpcsServed: 0 } } };
    const tokens = { ...joined, usage: { ...joined.usage, usage: { ...emptyUsage(), input: 5, totalTokens: 5 } } };
    for (const settlement of [spent, cloudflare, tokens]) {
      expect(JSON.parse(encodeSettlement(settlement))).toEqual(settlement);
      expect(decodeSettlement(encodeSettlement(settlement))).toEqual(settlement);
    }
  });

  it('orders the ledger by batch, then place in the batch, whichever entries were left out', () => {
    const lead = { ...joined, index: 0, usage: { ...joined.usage, modelCalls: 1, attempts: 1 } };
    const decoded = [
      { id: 'sub_j', stored: decodeSettlement(encodeSettlement(joined))! },
      { id: 'sub_lead', stored: decodeSettlement(encodeSettlement(lead))! },
    ];
    expect(ledgerOrder(decoded)).toEqual([
      { submissionId: 'sub_lead', ...lead.usage },
      { submissionId: 'sub_j', ...joined.usage },
    ]);
  });

  it('does not decode text that is no stored settlement', () => {
    for (const text of ['not json', '1', 'null', '{"seq":1}', '{"seq":1,"index":0,"outcome":"completed","usage":3}']) {
      expect(decodeSettlement(text)).toBeUndefined();
    }
  });
});
