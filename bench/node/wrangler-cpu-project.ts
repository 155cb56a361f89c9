/** The Flue project of wrangler-cpu.ts and wrangler-profile.ts: the template plus one agent and a turn route. */
import { SYSTEM_PROMPT, TOOL_DESCRIPTION, TOOL_NAME } from './side-by-side-script.ts';

/** The agent, with the same model, tool and instruction as the bare object's calls. */
export const AGENT = `'use agent';
import * as v from 'valibot';
import { useModel, useTool } from '@flue/runtime';

export function Bench() {
  useModel('anthropic/claude-haiku-4-5');
  useTool({
    name: ${JSON.stringify(TOOL_NAME)},
    description: ${JSON.stringify(TOOL_DESCRIPTION)},
    input: v.object({ key: v.string() }),
    // The same output as side-by-side-script.ts's toolOutput(), which the bare object calls.
    run: ({ data }) => ({ output: { key: data.key, value: 'value-of-' + data.key } }),
  });
  return ${JSON.stringify(SYSTEM_PROMPT)};
}
`;

/** One HTTP request per turn, like the bare Worker's: dispatch, then read the reply. */
export const ROUTE = `
import { Bench } from './agents/bench.ts';
app.post('/turn/:id', async (c) => {
  const bench = init(Bench, { id: c.req.param('id') });
  const reply = await bench.read(await bench.dispatch(await c.req.text()));
  return c.json({ reply: reply.text });
});
`;

