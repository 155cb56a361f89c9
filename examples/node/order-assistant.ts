/**
 * The Node example: the seed's OrderAssistant answering one question through `start()`.
 *
 * With ANTHROPIC_API_KEY set it talks to Anthropic for real; without it, a scripted local model
 * server (speaking the Anthropic Messages wire format) plays the model, so this runs offline.
 *
 *   npm run example                      # scripted model
 *   ANTHROPIC_API_KEY=… npm run example  # real model
 */
import * as v from 'valibot';
import { defineTool, init, observe, useModel, useTool } from '@flue/runtime';
import { sqlite, start } from '@flue/runtime/node';
import { scriptedProvider, startScriptedModelServer } from '@flue/runtime/testing';

const orders = new Map([['7', { status: 'shipped', eta: '2026-12-02' }]]);

const lookupOrder = defineTool({
  name: 'lookup_order',
  description: 'Look up one order by id and return its current status.',
  input: v.object({ orderId: v.string() }),
  async run({ data, log }) {
    log.info('looking up order', { orderId: data.orderId });
    const order = orders.get(data.orderId);
    if (!order) throw new Error(`No order ${data.orderId}.`);
    return { output: order };
  },
});

function OrderAssistant() {
  useModel('anthropic/claude-haiku-4-5');
  useTool(lookupOrder);
  return 'Help customers check the status of their orders.';
}

const real = Boolean(process.env.ANTHROPIC_API_KEY);
const server = real ? undefined : await startScriptedModelServer();
server?.script(
  { text: 'Let me check that order.', toolCalls: [{ name: 'lookup_order', arguments: { orderId: '7' } }] },
  { text: 'Order 7 has shipped and should arrive on 2026-12-02.' },
);

const stopObserving = observe((event) => {
  if (event.type === 'log') console.error(`  [log] ${event.message as string}`);
});

const flue = await start({
  agents: [OrderAssistant],
  db: sqlite(process.env.FLUE_EXAMPLE_DB ?? ':memory:'),
  ...(server
    ? { providers: [scriptedProvider({ baseUrl: server.url, id: 'anthropic', models: ['claude-haiku-4-5'], api: 'anthropic-messages' })] }
    : {}),
});

console.error(real ? 'Model: anthropic/claude-haiku-4-5 (real)' : `Model: scripted server at ${server!.url} (no ANTHROPIC_API_KEY set)`);
const assistant = init(OrderAssistant, { id: 'example-customer' });
const receipt = await assistant.dispatch('Where is my order 7?');
console.error(`Dispatched ${receipt.submissionId}; streaming:`);
const reply = await assistant.read(receipt, {
  onEvent(chunk) {
    if (chunk.type === 'message-delta') process.stderr.write(chunk.delta);
    if (chunk.type === 'tool-input') console.error(`\n  [tool] ${chunk.toolName}(${JSON.stringify(chunk.input)})`);
  },
});
console.error('');
console.log(reply.text);
stopObserving();
await flue.stop();
await server?.close();
