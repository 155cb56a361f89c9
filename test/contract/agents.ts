/** The agent the host contract suite (cases.ts) drives on every host. */
import { useModel, useTool } from '@flue/runtime';

/** Its scripted-model lane (the model id under the `scripted` provider). */
export const CONTRACT_LANE = 'contract';

/**
 * The `gate` tool's calls: how many started, and how many of the first ones wait until the test
 * opens the gate. Module state, which the test and the agent share on both hosts (in workerd the
 * Durable Objects run in the test's isolate).
 */
export const gate = { started: 0, held: 0, open: false };

export function resetGate(held = 0): void {
  gate.started = 0;
  gate.held = held;
  gate.open = false;
}

export function Contract() {
  useModel(`scripted/${CONTRACT_LANE}`);
  useTool({
    name: 'gate',
    description: 'Waits at the gate.',
    async run() {
      const call = gate.started++;
      while (call < gate.held && !gate.open) await new Promise((resolve) => setTimeout(resolve, 5));
      return 'passed';
    },
  });
  return 'Answer briefly.';
}
