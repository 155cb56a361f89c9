/** Test helper: waiting until a conversation's Durable Object is at rest. */
import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { BACKSTOP_MS } from '../../src/durable-objects/alarm-plan.ts';

/**
 * Waits until a Durable Object is at rest: its queue empty and no alarm left. An empty queue keeps
 * its last backstop until it lapses (alarm-plan.ts), so that alarm, due within the backstop's
 * window, is run here: it finds nothing to do and leaves none. An alarm still armed after a few
 * runs is open work or a timer, and fails the wait.
 */
export async function untilAtRest(stub: DurableObjectStub): Promise<void> {
  const alarm = () => runInDurableObject(stub, (_instance, state) => state.storage.getAlarm());
  for (let runs = 0; runs < 3; runs++) {
    const armed = await alarm();
    if (armed === null) return;
    if (armed > Date.now() + BACKSTOP_MS) throw new Error(`the alarm is armed ${armed - Date.now()} ms ahead: not a backstop`);
    // Run while work still drains, the alarm joins it and then leaves the backstop that work armed.
    await runDurableObjectAlarm(stub);
  }
  throw new Error(`the object kept its alarm armed (${await alarm()}): work is still open`);
}
