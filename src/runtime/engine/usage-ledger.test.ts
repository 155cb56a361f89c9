import { describe, expect, it } from 'vitest';
import type { PromptUsage } from '../common/types.ts';
import { BudgetExceededError } from '../common/errors.ts';
import { emptyUsage } from '../model/usage.ts';
import type { ConversationRecord } from '../store/records.ts';
import { Conversation } from './conversation.ts';
import { budgetReached, budgetStop } from './usage-ledger.ts';

const ts = '2026-01-01T00:00:00.000Z';

/** `tokens` input tokens costing `cost` in all. */
function spent(tokens: number, cost = 0): PromptUsage {
  const usage = emptyUsage();
  return { ...usage, input: tokens, totalTokens: tokens, cost: { ...usage.cost, input: cost, total: cost } };
}

function step(submissionId: string, usage: PromptUsage): ConversationRecord[] {
  return [
    { type: 'assistant_started', messageId: 'msg_a', stepId: `step_${submissionId}`, submissionId, attemptId: 'attempt_1', ts },
    {
      type: 'assistant_completed',
      messageId: 'msg_a',
      stepId: `step_${submissionId}`,
      submissionId,
      message: { role: 'assistant', content: [], api: 'a', provider: 'p', model: 'm', usage, stopReason: 'stop', timestamp: 0 },
      ts,
    },
  ];
}

function fold(...batches: ConversationRecord[][]): Conversation {
  const conv = new Conversation();
  batches.forEach((records, seq) => conv.apply({ seq, records }));
  return conv;
}

const noChildren = () => {
  throw new Error('no child conversation expected');
};

describe('budgetReached', () => {
  it('is reached at equality, by tokens or by cost, and names the limit that was', () => {
    expect(budgetReached('submission', spent(99), { maxTokens: 100 })).toBeUndefined();
    expect(budgetReached('submission', spent(100), { maxTokens: 100 })?.meta).toEqual({
      scope: 'submission',
      limit: 'maxTokens',
      budget: 100,
      spent: 100,
    });
    const byCost = budgetReached('conversation', spent(10, 0.5), { maxTokens: 1000, maxCost: 0.5 });
    expect(byCost).toBeInstanceOf(BudgetExceededError);
    expect(byCost?.meta).toEqual({ scope: 'conversation', limit: 'maxCost', budget: 0.5, spent: 0.5 });
    expect(byCost?.status).toBe(402);
    expect(budgetReached('conversation', spent(1_000_000, 99), undefined)).toBeUndefined();
  });
});

describe('the ledger of the fold', () => {
  it('takes each settlement’s recorded entry, and for a settlement from before the ledger what its log shows', () => {
    const conv = fold(
      step('sub_old', spent(30, 0.1)),
      [{ type: 'submission_settled', submissionId: 'sub_old', outcome: 'completed', answeredBySubmissionId: 'sub_old', ts }],
      step('sub_new', spent(50, 0.2)),
      [
        {
          type: 'submission_settled',
          submissionId: 'sub_new',
          outcome: 'failed',
          answeredBySubmissionId: 'sub_new',
          usage: { usage: spent(50, 0.2), modelCalls: 1, toolCalls: 0, attempts: 3 },
          ts,
        },
      ],
    );
    const ledger = { total: conv.ledgerTotal, submissions: conv.ledger };
    expect(ledger.submissions).toEqual([
      { submissionId: 'sub_old', usage: spent(30, 0.1), modelCalls: 1, toolCalls: 0, attempts: 0 },
      { submissionId: 'sub_new', usage: spent(50, 0.2), modelCalls: 1, toolCalls: 0, attempts: 3 },
    ]);
    expect(ledger.total.totalTokens).toBe(80);
    expect(ledger.total.cost.total).toBeCloseTo(0.3, 12);
  });

  it('stops a response at its conversation’s budget: the settled ledger plus what the response spent', () => {
    const conv = fold(
      step('sub_1', spent(60)),
      [{ type: 'submission_settled', submissionId: 'sub_1', outcome: 'completed', answeredBySubmissionId: 'sub_1', ts }],
      step('sub_2', spent(30)),
    );
    expect(budgetStop({ perConversation: { maxTokens: 100 } }, conv, 'sub_2', noChildren)).toBeUndefined();
    conv.apply({ seq: 3, records: step('sub_2', spent(10)) });
    expect(budgetStop({ perConversation: { maxTokens: 100 } }, conv, 'sub_2', noChildren)?.meta).toMatchObject({
      scope: 'conversation',
      spent: 100,
    });
    // The per-submission limit is checked first and names its own scope.
    expect(
      budgetStop({ perSubmission: { maxTokens: 40 }, perConversation: { maxTokens: 100 } }, conv, 'sub_2', noChildren)?.meta,
    ).toMatchObject({
      scope: 'submission',
      spent: 40,
    });
    expect(budgetStop({}, conv, 'sub_2', noChildren)).toBeUndefined();
  });
});
