/**
 * Parts of the response loop an agent may never use, loaded on their first use (common/lazy-part.ts):
 * compaction's summarization and delegated `task` runs. Each module here is imported only here.
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
