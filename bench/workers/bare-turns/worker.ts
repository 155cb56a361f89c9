/**
 * The baseline for the wrangler-dev CPU benchmark (bench/node/wrangler-cpu.ts): a bare Worker and
 * one Durable Object per conversation that do what a Flue turn does with no framework. Each turn
 * appends the user message to the object's SQLite, makes the same pi-ai streaming calls as the
 * agent (Anthropic Messages, one `lookup` tool), runs the tool, appends every message it produced,
 * and answers with the reply text. The history is read back from SQLite when the object wakes.
 */
import { DurableObject } from 'cloudflare:workers';
import { createModels, createProvider } from '@earendil-works/pi-ai';
import * as anthropicMessages from '@earendil-works/pi-ai/api/anthropic-messages';
import { SYSTEM_PROMPT, TOOL_DESCRIPTION, TOOL_NAME, toolOutput } from '../../node/side-by-side-script.ts';

interface Env {
  MODEL_URL: string;
  BARE_CONVERSATION: DurableObjectNamespace<BareConversation>;
}

const PROVIDER = 'anthropic';
const MODEL = 'claude-haiku-4-5';

let models: ReturnType<typeof createModels> | undefined;

/** The same keyless provider shape the agent's scripted redirect registers. */
function modelsFor(baseUrl: string): ReturnType<typeof createModels> {
  if (models !== undefined) return models;
  models = createModels();
  models.setProvider(
    createProvider<'anthropic-messages'>({
      id: PROVIDER,
      name: PROVIDER,
      baseUrl,
      auth: { apiKey: { name: 'scripted', resolve: async () => ({ auth: { apiKey: 'scripted' }, source: 'scripted' }) } },
      models: [
        {
          id: MODEL,
          name: MODEL,
          api: 'anthropic-messages',
          provider: PROVIDER,
          baseUrl,
          reasoning: false,
          input: ['text'],
          contextWindow: 200_000,
          maxTokens: 8192,
          cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        },
      ],
      api: anthropicMessages,
    }),
  );
  return models;
}

const tools = [
  {
    name: TOOL_NAME,
    description: TOOL_DESCRIPTION,
    parameters: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
  },
];

type Message = Parameters<ReturnType<typeof createModels>['streamSimple']>[1]['messages'][number];

export class BareConversation extends DurableObject<Env> {
  private messages: Message[] | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec('CREATE TABLE IF NOT EXISTS messages (seq INTEGER PRIMARY KEY, body TEXT NOT NULL)');
  }

  private append(message: Message): void {
    this.messages!.push(message);
    this.ctx.storage.sql.exec('INSERT INTO messages (body) VALUES (?)', JSON.stringify(message));
  }

  /** One exchange: the user message, the model calls and tool runs, the reply text. */
  async turn(text: string): Promise<string> {
    this.messages ??= this.ctx.storage.sql
      .exec<{ body: string }>('SELECT body FROM messages ORDER BY seq')
      .toArray()
      .map((row) => JSON.parse(row.body) as Message);
    const client = modelsFor(this.env.MODEL_URL);
    const model = client.getModel(PROVIDER, MODEL)!;
    this.append({ role: 'user', content: text, timestamp: Date.now() });
    for (;;) {
      const stream = client.streamSimple(model, { systemPrompt: SYSTEM_PROMPT, messages: this.messages!, tools });
      let reply = '';
      for await (const event of stream) if (event.type === 'text_delta') reply += event.delta;
      const message = await stream.result();
      if (message.stopReason === 'error' || message.stopReason === 'aborted') {
        throw new Error(`bare: model call failed: ${message.errorMessage ?? message.stopReason}`);
      }
      this.append(message);
      const calls = message.content.filter((part) => part.type === 'toolCall');
      if (calls.length === 0) return reply;
      for (const call of calls) {
        this.append({
          role: 'toolResult',
          toolCallId: call.id,
          toolName: call.name,
          content: [{ type: 'text', text: JSON.stringify(toolOutput(String(call.arguments.key))) }],
          isError: false,
          timestamp: Date.now(),
        });
      }
    }
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const match = /^\/turn\/([^/]+)$/.exec(new URL(request.url).pathname);
    if (request.method !== 'POST' || match === null) return new Response('not found', { status: 404 });
    const text = await request.text();
    const reply = await env.BARE_CONVERSATION.getByName(match[1]!).turn(text);
    return Response.json({ reply });
  },
} satisfies ExportedHandler<Env>;
