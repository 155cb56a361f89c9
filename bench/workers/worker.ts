/**
 * The benchmark Worker: the generated-entry calls for one agent (test/workers/worker.ts's shape),
 * whose class is extended with a storage meter, plus `BareObject`, the baseline.
 */
import { DurableObject, env } from 'cloudflare:workers';
import { setProvider } from '@flue/runtime';
import {
  type FlueAgentDurableObject,
  configureFlueWorker,
  createFlueAgentClass,
  createFlueWorkerHandlers,
  extend,
} from '@flue/runtime/cloudflare';
import { scriptedProvider } from '@flue/runtime/testing';
import { AGENT_LANE, BARE_LANE, BenchAgent } from './agents.ts';
import { type MeterSnapshot, type StorageMeter, meterStorage } from './storage-meter.ts';

const modelUrl = () => (env as unknown as { SCRIPTED_MODEL_URL: string }).SCRIPTED_MODEL_URL;
setProvider(scriptedProvider({ baseUrl: modelUrl(), id: 'scripted', models: [AGENT_LANE], api: 'openai-completions' }));

const agents = [{ identity: 'BenchAgent', agent: BenchAgent, className: 'FlueBenchAgent', bindingName: 'FLUE_BENCH_AGENT' }];
configureFlueWorker({ env: env as unknown as Record<string, unknown>, agents });

/** What the bench reads from an agent object over RPC. */
export interface MeteredAgentRpc {
  benchMeter(): Promise<MeterSnapshot>;
  benchResetMeter(): Promise<void>;
  benchAlarm(): Promise<number | null>;
}

const meters = new WeakMap<object, StorageMeter>();

/**
 * The metered agent class. The meter is installed before `super()` (allowed: it does not touch
 * `this`), so the base constructor's `blockConcurrencyWhile` already sees the metered storage.
 */
const metered = extend({
  base: (Base) =>
    class MeteredAgentObject extends Base implements MeteredAgentRpc {
      constructor(ctx: DurableObjectState, objectEnv: Record<string, unknown>) {
        const meter = meterStorage(ctx, { writes: true });
        super(ctx, objectEnv);
        meters.set(this, meter);
      }

      async benchMeter(): Promise<MeterSnapshot> {
        return meters.get(this)!.snapshot();
      }

      async benchResetMeter(): Promise<void> {
        meters.get(this)!.reset();
      }

      async benchAlarm(): Promise<number | null> {
        return this.ctx.storage.getAlarm();
      }
    } as typeof FlueAgentDurableObject,
});

export const FlueBenchAgent = createFlueAgentClass(agents[0]!, metered);

/**
 * The baseline: the least a Durable Object can do to get from an RPC to the same outbound model
 * request: arm an alarm in the RPC, and in `alarm()` post one request to the scripted server.
 */
export class BareObject extends DurableObject<Record<string, unknown>> {
  async arm(): Promise<void> {
    await this.ctx.storage.setAlarm(Date.now());
  }

  override async alarm(): Promise<void> {
    const response = await fetch(`${modelUrl()}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer scripted' },
      body: JSON.stringify({ model: BARE_LANE, stream: false, messages: [{ role: 'user', content: 'ping' }] }),
    });
    await response.arrayBuffer();
  }

  async alarmAt(): Promise<number | null> {
    return this.ctx.storage.getAlarm();
  }
}

export default createFlueWorkerHandlers({
  app: { fetch: () => new Response('flue-workers bench worker') },
  generatedExports: ['FlueBenchAgent', 'BareObject'],
});
