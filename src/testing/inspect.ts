/**
 * In-process inspection of what the runtime records but never serves over HTTP: the child
 * conversations a conversation's `task` calls opened.
 */
import type { Agent } from '../runtime/authoring/identity.ts';
import { requireRuntime } from '../runtime/host/runtime.ts';
import type { ChildConversation } from '../runtime/engine/conversation.ts';

export type { ChildConversation } from '../runtime/engine/conversation.ts';

/**
 * The child conversations retained under an instance's conversation, depth first in the order
 * they were opened (a child's own delegations follow it), each with its transcript in the history
 * view's shape. Empty for a never-contacted instance. Works wherever `init()` does: on Node after
 * `start()`, and inside a Flue-built Worker (one RPC to the instance's Durable Object).
 */
export async function childConversations(agent: Agent, instanceId: string): Promise<ChildConversation[]> {
  const runtime = requireRuntime('childConversations()');
  return (await runtime.childConversations(runtime.registry.identityOf(agent), instanceId)) ?? [];
}
