/**
 * Test support: a bare ConversationEngine over a given store, woken the way a host wakes it, for
 * tests that stop and restart the engine on one store (what a process restart does).
 */
import { ConversationEngine } from '../../src/runtime/engine.ts';
import { type Agent, AgentRegistry } from '../../src/runtime/identity.ts';
import type { SqlStore } from '../../src/runtime/sql-store.ts';

export function engineOn(store: SqlStore, agents: readonly Agent[]): ConversationEngine {
  const registry = new AgentRegistry();
  for (const agent of agents) registry.register(agent);
  const engine: ConversationEngine = new ConversationEngine({
    store,
    registry,
    env: {},
    wake: (stream) => setImmediate(() => void engine.runQueue(stream)),
  });
  return engine;
}
