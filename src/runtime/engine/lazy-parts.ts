/**
 * Parts of the engine an agent may never use, loaded on their first use (common/lazy-part.ts):
 * compaction's summarization, delegated `task` runs, a harness's model work, and a conversation's
 * export and import (`exportConversation()`, `fork()`). Each module here is imported only here.
 */
import type { ToolCall } from '@earendil-works/pi-ai';
import { lazyPart } from '../common/lazy-part.ts';
import type { DelegatingResponse, TaskOutcome, TaskSite } from './task-run.ts';

export const compactionPart = lazyPart('compaction', () => import('./conversation-summary.ts'));

const taskRunPart = lazyPart('task run', () => import('./task-run.ts'));

/** task-run.ts `runTaskCall`, loaded on the first `task` call. */
export async function runTaskCall(parent: DelegatingResponse, call: ToolCall, site: TaskSite): Promise<TaskOutcome> {
  return (await taskRunPart()).runTaskCall(parent, call, site);
}

/** harness-scratch.ts, loaded by a harness's first `prompt()` or `compact()`. */
export const harnessScratchPart = lazyPart('harness', () => import('./harness-scratch.ts'));

/** conversation-transfer.ts, loaded by the first `exportConversation()` or `fork()`. */
export const transferPart = lazyPart('conversation transfer', () => import('./conversation-transfer.ts'));
