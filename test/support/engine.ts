/**
 * Test support: a bare ConversationEngine over a given store, woken the way a host wakes it, for
 * tests that stop and restart the engine on one store (what a process restart does).
 */
import { ConversationEngine } from '../../src/runtime/engine/engine.ts';
import { type Agent, AgentRegistry } from '../../src/runtime/authoring/identity.ts';
import type { SqlDriver, SqlStore } from '../../src/runtime/store/sql-store.ts';

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

/** Resolves once `probe` holds, checking every 10 ms; the test's timeout is the only bound. */
export async function until(probe: () => boolean): Promise<void> {
  while (!probe()) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** Whether any conversation in the store has committed streamed text (an assistant_delta batch). */
export function deltaCommitted(driver: SqlDriver): boolean {
  return driver.query(`SELECT 1 FROM flue_log WHERE records LIKE '%"type":"assistant_delta"%' LIMIT 1`).length > 0;
}
