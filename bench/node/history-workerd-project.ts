/**
 * The Flue project of history-workerd.ts: the Cloudflare template plus the history agent (one
 * `lookup` tool, as on Node), a turn route (`dispatch()` then `read()`), and a bench-only way to
 * grow its conversation fast: an RPC method added to the agent's Durable Object class with
 * `extend({ base })` that appends segments of copied exchanges through the store, inside the object
 * (bench/history-segments.ts, the same code the Node builder runs). The wake and the measured turn
 * go through the public API only.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeFiles } from '../../src/build/test-project.ts';
import { SYSTEM_PROMPT, TOOL_DESCRIPTION, TOOL_NAME } from './history-script.ts';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const source = (rel: string) => JSON.stringify(path.join(repo, rel));

export const AGENT_ID = 'History';
export const BINDING = 'FLUE_HISTORY_AGENT';

const AGENT = `'use agent';
import * as v from 'valibot';
import { useModel, useTool } from '@flue/runtime';
import { extend } from '@flue/runtime/cloudflare';
import { appendHistory } from '../history-writer.ts';

export function ${AGENT_ID}() {
  useModel('anthropic/claude-haiku-4-5');
  useTool({
    name: ${JSON.stringify(TOOL_NAME)},
    description: ${JSON.stringify(TOOL_DESCRIPTION)},
    input: v.object({ key: v.string() }),
    // The same output as history-script.ts's toolValue(key).
    run: ({ data }) => ({ output: { value: 'value-of-' + data.key + ' ' } }),
  });
  return ${JSON.stringify(SYSTEM_PROMPT)};
}

export const cloudflare = extend({
  base: (Base) =>
    class extends Base {
      /** Bench only: appends segments of copied exchanges to this object's conversation. */
      benchAppendHistory(instanceId, segments, cursor) {
        return appendHistory(this.ctx.storage, ${JSON.stringify(AGENT_ID)}, instanceId, segments, cursor);
      }
    },
});
`;

/** Imports the store by path from this checkout: bench-only code, bundled into the bench Worker. */
const WRITER = `import { SqlStore } from ${source('src/runtime/store/sql-store.ts')};
import { conversationKey } from ${source('src/runtime/store/conversation-key.ts')};
import { durableObjectSqlDriver } from ${source('src/durable-objects/sql-driver.ts')};
import { appendSegment, planHistory } from ${source('bench/history-segments.ts')};

export function appendHistory(storage, agent, instanceId, segments, cursor) {
  const store = new SqlStore(durableObjectSqlDriver(storage));
  const key = conversationKey(agent, instanceId);
  // The seed exchanges are the conversation's first few batches.
  const planned = planHistory(store.readBatches(key, -1, 64).map((batch) => batch.records));
  let next = cursor ?? planned.cursor;
  for (let i = 0; i < segments; i++) next = appendSegment(store, key, planned.plan, next);
  return { cursor: next, databaseBytes: storage.sql.databaseSize };
}
`;

const ROUTE = `
import { ${AGENT_ID} } from './agents/history.ts';
app.post('/turn/:id', async (c) => {
  const agent = init(${AGENT_ID}, { id: c.req.param('id') });
  const started = Date.now();
  try {
    const receipt = await agent.dispatch(await c.req.text());
    const receiptMs = Date.now() - started;
    const reply = await agent.read(receipt);
    return c.json({ reply: reply.text, receiptMs });
  } catch (error) {
    return c.json({ error: String(error && error.message), type: error && error.type }, 500);
  }
});
app.post('/bench/history/:id', async (c) => {
  const { segments, cursor } = await c.req.json();
  const stub = c.env.${BINDING}.getByName(c.req.param('id'));
  return c.json(await stub.benchAppendHistory(c.req.param('id'), segments, cursor));
});
app.get('/bench/ping', (c) => c.text('ok'));
`;

/** Turns a copy of the template into the bench project (to be built by `flue build`). */
export function writeHistoryProject(project: string): void {
  writeFiles(project, { 'src/agents/history.ts': AGENT, 'src/history-writer.ts': WRITER });
  const app = path.join(project, 'src/app.ts');
  writeFileSync(app, readFileSync(app, 'utf8').replace('export default app;', `${ROUTE}\nexport default app;`));
  const wrangler = path.join(project, 'wrangler.jsonc');
  writeFileSync(wrangler, readFileSync(wrangler, 'utf8').replace('["FlueHelloAgent"]', `["FlueHelloAgent", "Flue${AGENT_ID}Agent"]`));
}
