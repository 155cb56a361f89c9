/**
 * Parts of the response loop an agent may never use, loaded on their first use: compaction's
 * summarization and delegated `task` runs. On Node each is a file of the built package loaded by
 * the first response that needs it; in a Worker built by `flue build` it is a chunk workerd
 * compiles then (a module imported only here must stay so: a static import from anywhere else
 * brings it back into every start). The first use awaits the load; a load that fails rejects that
 * use with an error naming the part, and the next use tries again.
 */
import type { ToolCall } from '@earendil-works/pi-ai';
import { FlueError } from '../common/errors.ts';
import type { DelegatingResponse, TaskOutcome, TaskSite } from './task-run.ts';

/** `load` once, shared by concurrent first uses; a failure is not cached. */
export function lazyPart<T>(name: string, load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () =>
    (loading ??= load().catch((cause: unknown) => {
      loading = undefined;
      throw new FlueError('internal_error', {
        message: `The runtime could not load its ${name} code.`,
        dev: cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause),
        cause,
      });
    }));
}

export const compactionPart = lazyPart('compaction', () => import('./conversation-summary.ts'));

const taskRunPart = lazyPart('task run', () => import('./task-run.ts'));

/** task-run.ts `runTaskCall`, loaded on the first `task` call. */
export async function runTaskCall(parent: DelegatingResponse, call: ToolCall, site: TaskSite): Promise<TaskOutcome> {
  return (await taskRunPart()).runTaskCall(parent, call, site);
}
