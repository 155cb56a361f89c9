/**
 * The host contract (test/contract/cases.ts) in workerd: every verb is an RPC to the agent's
 * Durable Object, and every response runs in it. Restarting resets the object; its backstop
 * alarm (run here at once, instead of after 30 s) recovers the work.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { hostContract, until } from '../contract/cases.ts';
import './worker.ts';

const stubOf = (id: string) => (env as unknown as { FLUE_CONTRACT_AGENT: DurableObjectNamespace }).FLUE_CONTRACT_AGENT.getByName(id);

hostContract(() => ({
  modelUrl: (env as unknown as { SCRIPTED_MODEL_URL: string }).SCRIPTED_MODEL_URL,
  async restart(instanceId) {
    await runInDurableObject(stubOf(instanceId), (_instance, state) => {
      try {
        state.abort('contract restart');
      } catch {
        // abort() throws in the calling context by design
      }
    }).catch(() => {});
    // A fresh stub per call: one that reached the object before its reset stays broken.
    await until(async () => ((await runDurableObjectAlarm(stubOf(instanceId))) ? true : undefined), 20_000);
  },
}));
