/**
 * `useDelivery().origin`: who handed the delivery to the runtime. Trusted code (`dispatch()`,
 * handles) is `'app'`, the agent itself (`useDispatchMessage()`, a hook's `append`, a task prompt)
 * is `'agent'`; HTTP clients (`'http'`) are covered with the router (src/runtime/http/router-trust.test.ts).
 * The origin is stored with the submission, so a delivery recovered by another engine keeps it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  defineSubagent,
  init,
  useAgentStart,
  useDelivery,
  useDispatchMessage,
  useModel,
  useSubagent,
  useTool,
  type DeliveryOrigin,
  type DispatchReceipt,
} from '@flue/runtime';
import { sqlite } from '@flue/runtime/node';
import { scriptedProvider, startScriptedModelServer, type ScriptedModelServer } from '@flue/runtime/testing';
import { ConversationEngine } from '../src/runtime/engine/engine.ts';
import { AgentRegistry } from '../src/runtime/authoring/identity.ts';
import { registerProviders } from '../src/runtime/model/providers.ts';
import { SqlStore } from '../src/runtime/store/sql-store.ts';
import { parseDeliveredMessage } from '../src/runtime/engine/delivered-message.ts';
import { engineOn } from './support/engine.ts';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

const MODEL = 'anthropic/claude-haiku-4-5';

/** Per delivery a response started for: a label and the origin `useDelivery()` reported. */
const seen: [string, DeliveryOrigin][] = [];

function label(delivery: ReturnType<typeof useDelivery>): string {
  return delivery.kind === 'user' ? delivery.body : delivery.type;
}

describe('on a running runtime', () => {
  const ctx = useScriptedRuntime();

  it('dispatch() and handles deliver as "app"; useDispatchMessage() and hook appends as "agent"', async () => {
    seen.length = 0;
    let followUp: DispatchReceipt | undefined;
    function Desk() {
      useModel(MODEL);
      const delivery = useDelivery();
      const toSelf = useDispatchMessage();
      useAgentStart(({ append }) => {
        seen.push([label(delivery), delivery.origin]);
        if (label(delivery) === 'ping') append({ kind: 'signal', type: 'note', body: 'from a hook' });
      });
      useTool({
        name: 'follow_up',
        description: 'Queues a follow-up.',
        async run() {
          followUp = await toSelf({ kind: 'signal', type: 'followup', body: 'later' });
          return 'queued';
        },
      });
      return `LAST=${label(delivery)}:${delivery.origin}`;
    }
    await ctx.start([Desk]);
    ctx.server.script({ toolCalls: [{ name: 'follow_up', arguments: {} }] }, { text: 'done' }, { text: 'pong' });
    const handle = init(Desk, { id: 'd1' });
    await handle.read(await handle.dispatch('hello'));
    await handle.read(followUp!);
    await handle.read(await handle.dispatch({ message: { kind: 'signal', type: 'ping', body: '!' } }));

    expect(seen).toEqual([
      ['hello', 'app'],
      ['followup', 'agent'],
      ['ping', 'app'],
    ]);
    // The render after the hook's append sees the appended signal, from the agent.
    expect(ctx.server.requests.at(-1)!.system).toContain('LAST=note:agent');
  });

  it('origin is non-enumerable: the delivery still equals, spreads and serializes as the plain message', async () => {
    let delivery: ReturnType<typeof useDelivery> | undefined;
    function Plain() {
      useModel(MODEL);
      delivery = useDelivery();
      return 'Hi.';
    }
    await ctx.start([Plain]);
    ctx.server.script({ text: 'ok' });
    const handle = init(Plain, { id: 'p1' });
    await handle.read(await handle.dispatch({ message: { kind: 'signal', type: 't', body: 'b', attributes: { a: '1' } } }));
    const plain = { kind: 'signal', type: 't', body: 'b', attributes: { a: '1' } };
    expect(delivery).toEqual(plain);
    expect(delivery).toStrictEqual(plain);
    expect(delivery!.origin).toBe('app');
    expect(Object.keys(delivery!)).toEqual(['kind', 'type', 'body', 'attributes']);
    expect(JSON.parse(JSON.stringify(delivery))).toEqual(plain);
    expect({ ...delivery }).not.toHaveProperty('origin');
  });

  it('a delegated task sees its prompt as coming from the agent', async () => {
    let delegate: [string, DeliveryOrigin] | undefined;
    const drafter = defineSubagent({
      name: 'drafter',
      description: 'Drafts.',
      agent() {
        const delivery = useDelivery();
        delegate = [label(delivery), delivery.origin];
        return 'You draft.';
      },
    });
    function Lead() {
      useModel(MODEL);
      useSubagent(drafter);
      return 'Lead.';
    }
    await ctx.start([Lead]);
    ctx.server.script(
      { toolCalls: [{ name: 'task', arguments: { agent: 'drafter', prompt: 'Do the thing.' } }] },
      { text: 'Did it.' },
      { text: 'All done.' },
    );
    const handle = init(Lead, { id: 'l1' });
    expect((await handle.read(await handle.dispatch('go'))).text).toBe('All done.');
    expect(delegate).toEqual(['Do the thing.', 'agent']);
  });
});

describe('across engines on one store (recovery)', () => {
  let server: ScriptedModelServer;
  beforeAll(async () => {
    server = await startScriptedModelServer();
    registerProviders([
      scriptedProvider({ baseUrl: server.url, id: 'anthropic', models: ['claude-haiku-4-5'], api: 'anthropic-messages' }),
    ]);
  });
  afterAll(async () => server.close());

  function Recorder() {
    useModel(MODEL);
    const delivery = useDelivery();
    useAgentStart(() => {
      seen.push([label(delivery), delivery.origin]);
    });
    return 'Record.';
  }

  it('a submission admitted by one engine and run by the next keeps the origin of its transport', async () => {
    seen.length = 0;
    const adapter = sqlite();
    await adapter.migrate();
    const store = new SqlStore(await adapter.connect());
    // An engine that admits and never runs anything: the process "dies" with both queued.
    const registry = new AgentRegistry();
    registry.register(Recorder);
    const first = new ConversationEngine({ store, registry, env: {}, wake: () => undefined });
    const posted = await first.admit('Recorder', { id: 'r1', message: parseDeliveredMessage('from a client') }, 'http');
    const dispatched = await first.admit('Recorder', { id: 'r2', message: parseDeliveredMessage('from the app') }, 'dispatch');
    // What useDispatchMessage() admits (the engine sets this flag only for its own agents).
    const fromAgent = await first.admit('Recorder', { id: 'r3', message: parseDeliveredMessage('from the agent') }, 'dispatch', true);
    await first.stop();

    server.script({ text: 'one' }, { text: 'two' }, { text: 'three' });
    const second = engineOn(store, [Recorder]);
    for (const stream of second.view.keysWithOpenWork()) void second.runQueue(stream);
    await second.read('Recorder', 'r1', posted.receipt.submissionId);
    await second.read('Recorder', 'r2', dispatched.receipt.submissionId);
    await second.read('Recorder', 'r3', fromAgent.receipt.submissionId);
    expect(seen.sort()).toEqual([
      ['from a client', 'http'],
      ['from the agent', 'agent'],
      ['from the app', 'app'],
    ]);
    await second.stop();
    await adapter.close();
  });
});
