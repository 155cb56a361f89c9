/** The Flue project of wrangler-cpu.ts and wrangler-profile.ts: the template plus one agent and a turn route. */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { writeFiles } from '../../src/build/test-project.ts';
import { SYSTEM_PROMPT, TOOL_DESCRIPTION, TOOL_NAME } from './side-by-side-script.ts';

/**
 * The agent, with the same model, tool and instruction as the bare object's calls. Its object's
 * storage is metered (bench/workers/storage-meter.ts, installed through `extend({ base })`), like
 * the bare object's and the Agents SDK object's, so `GET /meter` can say how many rows a turn wrote
 * and read, how many bytes it left stored and how many requests its object received.
 */
export const AGENT = `'use agent';
import * as v from 'valibot';
import { useModel, useTool } from '@flue/runtime';
import { extend } from '@flue/runtime/cloudflare';
import { meterRequests, meterStorage } from '../storage-meter.ts';

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

export const cloudflare = extend({
  base: (Base) => {
    // Every verb the Worker calls over RPC, and the alarm that runs the turn.
    meterRequests(Base.prototype, (name) => name.startsWith('__flue') || name === 'alarm');
    return class extends Base {
      constructor(ctx, env) {
        meterStorage(ctx);
        super(ctx, env);
      }

      // The backstop a queue leaves to lapse when it empties (docs/design/cloudflare.md §6.2),
      // run now instead of up to 30 s later, so it lands in the figure of the scenario that left
      // it and in no other. The same handler as when the alarm fires.
      async benchLapse() {
        if ((await this.ctx.storage.getAlarm()) === null) return;
        await this.ctx.storage.deleteAlarm();
        await this.alarm();
      }
    };
  },
});
`;

/** One HTTP request per turn, like the bare Worker's: dispatch, then read the reply. */
export const ROUTE = `
import { Bench } from './agents/bench.ts';
import { isolateWrites, pauseMeters } from './storage-meter.ts';
app.post('/turn/:id', async (c) => {
  const bench = init(Bench, { id: c.req.param('id') });
  const reply = await bench.read(await bench.dispatch(await c.req.text()));
  return c.json({ reply: reply.text });
});
/** Runs the lapsing backstop of each conversation named in the body (a JSON array of ids) now. */
app.post('/lapse', async (c) => {
  const ids = await c.req.json();
  await Promise.all(ids.map((id) => c.env.FLUE_BENCH_AGENT.getByName(id).benchLapse()));
  return c.body(null, 204);
});
app.get('/meter', (c) => c.json(isolateWrites()));
app.post('/meter/:state{pause|resume}', (c) => {
  pauseMeters(c.req.param('state') === 'pause');
  return c.body(null, 204);
});
`;

/** Turns a copy of the template into the bench project (to be built by `flue build`). */
export function writeBenchProject(project: string): void {
  const meter = readFileSync(new URL('../workers/storage-meter.ts', import.meta.url), 'utf8');
  writeFiles(project, { 'src/agents/bench.ts': AGENT, 'src/storage-meter.ts': meter });
  const app = path.join(project, 'src/app.ts');
  writeFileSync(app, readFileSync(app, 'utf8').replace('export default app;', `${ROUTE}\nexport default app;`));
  const wrangler = path.join(project, 'wrangler.jsonc');
  writeFileSync(wrangler, readFileSync(wrangler, 'utf8').replace('["FlueHelloAgent"]', '["FlueHelloAgent", "FlueBenchAgent"]'));
}
