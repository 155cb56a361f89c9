/**
 * The reply reader both hosts share: it follows one submission to its settlement,
 * projecting the batches it receives into stream chunks for `onEvent`. Where the answers come from
 * is the host's: the engine in process on Node, bounded polls of the Durable Object on Cloudflare.
 */
import type { ReadOptions, ReadPoll } from './verbs.ts';
import { AgentRunError, abortError } from '../common/errors.ts';
import { Projector } from './projection.ts';
import type { AgentReply } from '../common/types.ts';

/** The next answer: batches after `afterSeq` (when `batches` is set) and the settlement once it is there. */
export type NextAnswer = (afterSeq: number, batches: boolean) => Promise<ReadPoll>;

export async function readReply(next: NextAnswer, submissionId: string, options: ReadOptions = {}): Promise<AgentReply> {
  const { signal, onEvent } = options;
  const projector = onEvent === undefined ? undefined : new Projector();
  let afterSeq = -1;
  for (;;) {
    if (signal?.aborted) throw signal.reason ?? abortError();
    const answer = await next(afterSeq, projector !== undefined);
    for (const batch of answer.batches) {
      afterSeq = batch.seq;
      for (const chunk of projector!.project(batch)) {
        try {
          onEvent!(chunk);
        } catch (error) {
          console.error('[flue] read() onEvent callback threw:', error);
        }
      }
    }
    const settled = answer.settled;
    if (settled === undefined) continue;
    if (settled.outcome !== 'completed') throw new AgentRunError(settled.outcome, submissionId, settled.error);
    return settled.reply!;
  }
}
