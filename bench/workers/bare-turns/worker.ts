/**
 * The baseline for the wrangler-dev CPU benchmark (bench/node/wrangler-cpu.ts): a bare Worker and
 * one Durable Object per conversation that do what a Flue turn does with no framework. Each turn
 * appends the user message to the object's SQLite, makes the same pi-ai streaming calls as the
 * agent (Anthropic Messages, one `lookup` tool), runs the tool, appends every message it produced,
 * and answers with the reply text. The history is read back from SQLite when the object wakes.
 *
 * Messages that arrive while an exchange runs are appended to SQLite at once (admitted) and
 * answered together by the next exchange, which sees all of them: the least queue that keeps a
 * conversation in order under concurrent sends, and what Flue does with queued messages.
 *
 * `POST /turn/:id` is one call that answers with the reply. `POST /receipt/:id` is the same turn
 * in the shape of Flue's API, `read(await dispatch(text))`: one call admits the message and
 * answers a receipt, a second call on the receipt reads the reply (the wrangler bench's burst
 * measures both).
 */
import { DurableObject, RpcTarget } from 'cloudflare:workers';
import { createModels, createProvider } from '@earendil-works/pi-ai';
import * as anthropicMessages from '@earendil-works/pi-ai/api/anthropic-messages';
import { SYSTEM_PROMPT, TOOL_DESCRIPTION, TOOL_NAME, toolOutput } from '../../node/side-by-side-script.ts';
import { benchRoutes, meterRequests, meterStorage } from '../storage-meter.ts';

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

/** An admitted message's reply, read over the RPC session of the call that admitted it. */
class Receipt extends RpcTarget {
  readonly #reply: Promise<string>;

  constructor(reply: Promise<string>) {
    super();
    this.#reply = reply;
  }

  read(): Promise<string> {
    return this.#reply;
  }
}

type Message = Parameters<ReturnType<typeof createModels>['streamSimple']>[1]['messages'][number];

export class BareConversation extends DurableObject<Env> {
  private messages: Message[] | undefined;
  /** The exchange being run (or last run); messages admitted meanwhile belong to the next. */
  private exchangeNo = 0;
  /** Messages admitted since the running exchange started, and their senders. */
  private inbox: Message[] = [];
  private waiting: ((reply: Promise<string>) => void)[] = [];
  private running = false;

  constructor(ctx: DurableObjectState, env: Env) {
    // Metered like the other sides (rows written per turn); it only counts.
    meterStorage(ctx);
    super(ctx, env);
    ctx.storage.sql.exec('CREATE TABLE IF NOT EXISTS history (seq INTEGER PRIMARY KEY, exchange INTEGER NOT NULL, body TEXT NOT NULL)');
  }

  private append(message: Message, exchange = this.exchangeNo): void {
    this.ctx.storage.sql.exec('INSERT INTO history (exchange, body) VALUES (?, ?)', exchange, JSON.stringify(message));
  }

  /**
   * `turn`, answering once the message is admitted with a receipt whose `read()` answers the reply:
   * a call on the receipt belongs to this call's RPC session, the cheapest second call there is
   * (ours' admission answers its poll the same way).
   */
  admit(text: string): Receipt {
    const reply = this.turn(text);
    reply.catch(() => {});
    return new Receipt(reply);
  }

  /**
   * Admits the user message (one row, in the order it will be read back), then answers with the
   * reply of the exchange that saw it.
   */
  turn(text: string): Promise<string> {
    if (this.messages === undefined) {
      const rows = this.ctx.storage.sql
        .exec<{ exchange: number; body: string }>('SELECT exchange, body FROM history ORDER BY exchange, seq')
        .toArray();
      this.messages = rows.map((row) => JSON.parse(row.body) as Message);
      this.exchangeNo = rows.at(-1)?.exchange ?? 0;
    }
    const message: Message = { role: 'user', content: text, timestamp: Date.now() };
    this.append(message, this.exchangeNo + 1);
    this.inbox.push(message);
    const reply = new Promise<string>((resolve) => this.waiting.push((answer) => resolve(answer)));
    if (!this.running) void this.drain();
    return reply;
  }

  /** Runs exchanges while messages wait, each answering every sender admitted before it began. */
  private async drain(): Promise<void> {
    this.running = true;
    while (this.inbox.length > 0) {
      this.exchangeNo++;
      this.messages!.push(...this.inbox);
      const senders = this.waiting;
      this.inbox = [];
      this.waiting = [];
      const reply = this.exchange();
      reply.catch(() => {});
      for (const answer of senders) answer(reply);
      await reply.catch(() => {});
    }
    this.running = false;
  }

  /** One exchange over the history: the model calls and tool runs, the reply text. */
  private async exchange(): Promise<string> {
    const client = modelsFor(this.env.MODEL_URL);
    const model = client.getModel(PROVIDER, MODEL)!;
    for (;;) {
      const stream = client.streamSimple(model, { systemPrompt: SYSTEM_PROMPT, messages: this.messages!, tools });
      let reply = '';
      for await (const event of stream) if (event.type === 'text_delta') reply += event.delta;
      const message = await stream.result();
      if (message.stopReason === 'error' || message.stopReason === 'aborted') {
        throw new Error(`bare: model call failed: ${message.errorMessage ?? message.stopReason}`);
      }
      this.messages!.push(message);
      this.append(message);
      const calls = message.content.filter((part) => part.type === 'toolCall');
      if (calls.length === 0) return reply;
      for (const call of calls) {
        const result: Message = {
          role: 'toolResult',
          toolCallId: call.id,
          toolName: call.name,
          content: [{ type: 'text', text: JSON.stringify(toolOutput(String(call.arguments.key))) }],
          isError: false,
          timestamp: Date.now(),
        };
        this.messages!.push(result);
        this.append(result);
      }
    }
  }
}

// One RPC per turn (`turn`, or `admit` and its receipt's `read()` in one session): the object's entry points (it sets no alarm).
meterRequests(BareConversation.prototype, (name) => name === 'turn' || name === 'admit');

export default {
  fetch: (request: Request, env: Env) =>
    benchRoutes(request, {
      turn: (id, text) => env.BARE_CONVERSATION.getByName(id).turn(text),
      receipt: async (id, text) => {
        using receipt = await env.BARE_CONVERSATION.getByName(id).admit(text);
        return await receipt.read();
      },
    }),
} satisfies ExportedHandler<Env>;
