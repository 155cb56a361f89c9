/**
 * The Agents SDK side of bench/node/wrangler-cpu.ts, served by `wrangler dev`: the chat agent of
 * agent.ts with its storage metered (bench/workers/storage-meter.ts), behind the same routes as the
 * other two sides: `POST /turn/:id` (one exchange) and `GET /meter` (rows written in this isolate).
 */
import { getAgentByName } from 'agents';
import { benchRoutes, meterStorage } from '../workers/storage-meter.ts';
import { ChatAgent as Agent, type Env } from './agent.ts';

export class ChatAgent extends Agent {
  constructor(ctx: DurableObjectState, env: Env) {
    meterStorage(ctx);
    super(ctx, env);
  }
}

export default {
  fetch: (request: Request, env: Env) =>
    benchRoutes(request, async (id, text) => (await getAgentByName(env.ChatAgent as unknown as DurableObjectNamespace<ChatAgent>, id)).turn(text)),
} satisfies ExportedHandler<Env>;
