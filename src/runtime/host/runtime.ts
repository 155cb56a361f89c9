/**
 * The runtime slot: at most one configured Flue runtime per process or isolate. The public verbs
 * (`dispatch`, `init`, `getAgentInstance`) resolve it per call, so they work wherever a host has
 * configured one — `start()` on Node, the generated Worker entry on Cloudflare.
 */
import type { ReadOptions } from '../engine/verbs.ts';
import type { AgentRegistry } from '../authoring/identity.ts';
import type { AgentReply } from '../common/types.ts';
import type { ConversationVerbs } from '../engine/verbs.ts';

export type { Admission, StoredAttachment, UpdatesResult } from '../engine/verbs.ts';

/**
 * What a host configures: the conversation verbs of verbs.ts (all but `poll`, the remote half of
 * `read`), the agent registry, and `read()`, which follows one submission to its reply.
 */
export interface FlueRuntime extends Omit<ConversationVerbs, 'poll'> {
  readonly registry: AgentRegistry;
  read(agentName: string, instanceId: string, submissionId: string, options?: ReadOptions): Promise<AgentReply>;
}

// A global symbol, so two copies of this module in one process still share one runtime.
const SLOT = Symbol.for('flue.runtime');
type Slot = { [SLOT]?: FlueRuntime };

export function configureRuntime(runtime: FlueRuntime): void {
  (globalThis as Slot)[SLOT] = runtime;
}

export function clearRuntime(runtime: FlueRuntime): void {
  if ((globalThis as Slot)[SLOT] === runtime) delete (globalThis as Slot)[SLOT];
}

export function configuredRuntime(): FlueRuntime | undefined {
  return (globalThis as Slot)[SLOT];
}

export function requireRuntime(verb: string): FlueRuntime {
  const runtime = configuredRuntime();
  if (runtime === undefined) {
    throw new Error(
      `[flue] ${verb} needs a configured Flue runtime, and none is configured in this process. ` +
        'In a script or test, call start({ agents }) from @flue/runtime/node first; inside a Flue-built Worker it is configured for you.',
    );
  }
  return runtime;
}
