/**
 * The Agents SDK side of bench/node/wrangler-cpu.ts, served by `wrangler dev`: the chat agent of
 * agent.ts with its storage metered (bench/workers/storage-meter.ts), behind the same routes as the
 * other two sides: `POST /turn/:id` (one exchange) and `GET /meter` (rows written in this isolate).
 */
import { getAgentByName } from 'agents';
import { isolateWrites, meterStorage } from '../workers/storage-meter.ts';
import { ChatAgent as Agent, type Env } from './agent.ts';

export class ChatAgent extends Agent {
  constructor(ctx: DurableObjectState, env: Env) {
    meterStorage(ctx);
    super(ctx, env);
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === '/meter') return Response.json(isolateWrites());
    const match = /^\/turn\/([^/]+)$/.exec(url.pathname);
    if (request.method !== 'POST' || match === null) return new Response('not found', { status: 404 });
    const text = await request.text();
    const agent = await getAgentByName(env.ChatAgent as unknown as DurableObjectNamespace<ChatAgent>, match[1]!);
    return Response.json({ reply: await agent.turn(text) });
  },
} satisfies ExportedHandler<Env>;
