/** The agent the benchmark drives: one model lane, one trivial tool (for the multi-turn figure). */
import * as v from 'valibot';
import { defineTool, useModel, useTool } from '@flue/runtime';

/** Lanes are model ids on the scripted server. */
export const AGENT_LANE = 'bench-agent';
/** The bare object's alarm posts a model request on this lane: the same hop as the agent's. */
export const BARE_LANE = 'bench-bare';
/** Clock markers: requests the bench itself sends right before it starts a measured operation. */
export const MARKER_LANE = 'bench-marker';

const lookup = defineTool({
  name: 'lookup',
  description: 'Look something up.',
  input: v.object({ key: v.string() }),
  async run({ data }) {
    return { output: { key: data.key, value: `value-of-${data.key}` } };
  },
});

export function BenchAgent() {
  useModel(`scripted/${AGENT_LANE}`);
  useTool(lookup);
  return 'Answer briefly.';
}
