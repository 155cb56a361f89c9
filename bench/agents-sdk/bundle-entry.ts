/** What a user of the Agents SDK ships for this agent: the class and `routeAgentRequest`. */
import { routeAgentRequest } from 'agents';
import type { Env } from './agent.ts';

export { ChatAgent } from './agent.ts';

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    return (await routeAgentRequest(request, env)) ?? new Response('not found', { status: 404 });
  },
} satisfies ExportedHandler<Env>;
