import { runInDurableObject } from 'cloudflare:test';

/**
 * Resets a Durable Object as an eviction, a crash or a deploy would: its next call constructs a
 * fresh instance, which wakes its conversations from storage.
 */
export async function resetObject(stub: DurableObjectStub): Promise<void> {
  await runInDurableObject(stub, (_instance, state) => {
    try {
      state.abort('test reset');
    } catch {
      // abort() throws in the calling context by design
    }
  }).catch(() => {});
}
