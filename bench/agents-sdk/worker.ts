/**
 * The Agents SDK side of bench/node/wrangler-cpu.ts, served by `wrangler dev`: the chat agent of
 * agent.ts with its storage metered (bench/workers/storage-meter.ts), behind the same routes as the
 * other two sides: `POST /turn/:id` (one exchange) and `GET /meter` (rows written in this isolate).
 */
import { getAgentByName } from 'agents';
import { benchRoutes, meterRequests, meterStorage } from '../workers/storage-meter.ts';
import { ChatAgent as Agent, type Env } from './agent.ts';

export class ChatAgent extends Agent {
  constructor(ctx: DurableObjectState, env: Env) {
    meterStorage(ctx);
    super(ctx, env);
  }
}

// The entry points a turn reaches: `getAgentByName()` calls `__unsafe_ensureInitialized` over RPC
// before `turn`; alarms and HTTP requests if the SDK schedules or routes any.
const ENTRY_POINTS = new Set(['__unsafe_ensureInitialized', 'turn', 'alarm', 'fetch']);
meterRequests(ChatAgent.prototype, (name) => ENTRY_POINTS.has(name));

export default {
  fetch: (request: Request, env: Env) =>
    benchRoutes(request, {
      turn: async (id, text) => (await getAgentByName(env.ChatAgent as unknown as DurableObjectNamespace<ChatAgent>, id)).turn(text),
    }),
} satisfies ExportedHandler<Env>;
