/**
 * Interop test support: bounded waits on an SDK `observe()` observation, and a record of every
 * snapshot it published.
 */
import type {
  AgentConversationObservation,
  AgentConversationObservationSnapshot,
  ConversationStreamChunk,
  FlueConversationMessage,
} from '@flue/sdk';

export interface Watched {
  readonly observation: AgentConversationObservation;
  /** Every snapshot published, in order. */
  readonly snapshots: AgentConversationObservationSnapshot[];
  /** Resolves with the first snapshot (current or later) that satisfies `predicate`. */
  until(
    predicate: (snapshot: AgentConversationObservationSnapshot) => boolean,
    timeoutMs?: number,
    what?: string,
  ): Promise<AgentConversationObservationSnapshot>;
  close(): void;
}

export function watch(observation: AgentConversationObservation): Watched {
  const snapshots: AgentConversationObservationSnapshot[] = [];
  const waiters = new Set<() => void>();
  const unsubscribe = observation.subscribe(() => {
    snapshots.push(observation.getSnapshot());
    for (const waiter of [...waiters]) waiter();
  });
  return {
    observation,
    snapshots,
    until(predicate, timeoutMs = 15_000, what = 'condition') {
      return new Promise((resolve, reject) => {
        const check = () => {
          const snapshot = observation.getSnapshot();
          if (!predicate(snapshot)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(snapshot);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          const last = observation.getSnapshot();
          reject(
            new Error(
              `observation: timed out after ${timeoutMs} ms waiting for ${what}; phase ${last.phase}, error ${last.error?.message}, ` +
                `${last.conversation?.messages.length ?? 'no'} messages, settlements ${JSON.stringify(last.conversation?.settlements)}`,
            ),
          );
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close() {
      unsubscribe();
      observation.close();
    },
  };
}

export function settledIn(snapshot: AgentConversationObservationSnapshot, submissionId: string) {
  return snapshot.conversation?.settlements.find((s) => s.submissionId === submissionId);
}

/** The assistant message answering `submissionId`. */
export function replyMessage(messages: readonly FlueConversationMessage[] | undefined, submissionId: string) {
  return messages?.filter((m) => m.role === 'assistant' && m.submissionId === submissionId).at(-1);
}

/** Concatenated text of a message's text parts (no separator: parts hold the streamed deltas). */
export function textOf(message: FlueConversationMessage | undefined): string {
  return (message?.parts ?? []).flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
}

/** Concatenated `text` deltas of one message, in chunk order. */
export function deltaText(chunks: readonly ConversationStreamChunk[], messageId: string): string {
  return chunks.flatMap((c) => (c.type === 'message-delta' && c.kind === 'text' && c.messageId === messageId ? [c.delta] : [])).join('');
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
    }),
  ]);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` every 20 ms until it returns true; rejects after `timeoutMs` (default: only the test's timeout bounds it). */
export async function eventually(check: () => boolean, timeoutMs = Number.POSITIVE_INFINITY, what = 'a condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}
