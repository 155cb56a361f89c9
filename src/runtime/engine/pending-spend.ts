/**
 * Model calls of one response that no record carries yet: a harness's prompts and compactions (in
 * tools and hooks) and summarizations that failed. Like pending state, they ride on the response's
 * next commit (response-writer.ts) as one `model_spend` record per source, so the ledger and the
 * budgets count them once they are durable.
 */
import type { PromptUsage } from '../common/types.ts';
import { addUsage, emptyUsage } from '../model/usage.ts';
import type { ConversationRecord, RecordOf } from '../store/records.ts';

type Source = RecordOf<'model_spend'>['source'];

export class PendingSpend {
  private readonly submissionId: string;
  private readonly pending = new Map<Source, { usage: PromptUsage; modelCalls: number }>();

  /** `submissionId`: the response the calls are spent for (a delegate's loop runs under its root's). */
  constructor(submissionId: string) {
    this.submissionId = submissionId;
  }

  add(source: Source, usage: PromptUsage, modelCalls = 1): void {
    const sum = this.pending.get(source) ?? { usage: emptyUsage(), modelCalls: 0 };
    this.pending.set(source, { usage: addUsage(sum.usage, usage), modelCalls: sum.modelCalls + modelCalls });
  }

  get isEmpty(): boolean {
    return this.pending.size === 0;
  }

  /** The pending spending as records (none when nothing is pending); nothing is pending afterwards. */
  take(): ConversationRecord[] {
    const records = [...this.pending].map(
      ([source, { usage, modelCalls }]): RecordOf<'model_spend'> => ({
        type: 'model_spend',
        submissionId: this.submissionId,
        source,
        usage,
        modelCalls,
      }),
    );
    this.pending.clear();
    return records;
  }
}
