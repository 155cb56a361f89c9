/**
 * A cron tick as one idempotent signal delivery: the message is
 * a `kind: 'signal'` carrying the cron expression and the scheduled time as attributes, keyed by
 * both, so a tick fired twice (a platform retry, a manual re-trigger) converges on one submission.
 */
import { init, type Agent, type DispatchReceipt } from '@flue/runtime';

/** The parts of a `ScheduledController` (or a Workflow's `event.schedule`) the helper reads. */
export interface ScheduledTick {
  readonly cron: string;
  readonly scheduledTime: number;
}

export interface DispatchScheduledOptions {
  /** The conversation: fixed to continue one conversation per schedule, per fire for fresh ones. */
  id: string;
  /** The instruction the agent gets. */
  body: string;
  /** The signal type. Default `'schedule'`. */
  type?: string;
  /** Extra attributes; `cron` and `scheduledAt` (ISO 8601) are always set by the helper. */
  attributes?: Record<string, string>;
  tagName?: string;
  /** Applies only when this tick creates the instance. */
  initialData?: unknown;
  /** `null`: create only; a string: continue that incarnation only. */
  uid?: string | null;
  /** Default `cron:${cron}:${scheduledTime}`. Override when one tick sends several signals to one instance. */
  idempotencyKey?: string;
}

/** The key a tick's delivery uses unless one is given. */
export function scheduledIdempotencyKey(tick: ScheduledTick): string {
  return `cron:${tick.cron}:${tick.scheduledTime}`;
}

/**
 * Dispatch the tick's signal. Resolves once it is durably admitted: call it first in the
 * `scheduled` handler (a tick that fails before admission is lost).
 */
export async function dispatchScheduled(agent: Agent, tick: ScheduledTick, options: DispatchScheduledOptions): Promise<DispatchReceipt> {
  if (typeof tick !== 'object' || tick === null || typeof tick.cron !== 'string' || !Number.isFinite(tick.scheduledTime)) {
    throw new Error('[flue] dispatchScheduled() requires the ScheduledController (cron and scheduledTime) as its second argument.');
  }
  if (typeof options !== 'object' || options === null) throw new Error('[flue] dispatchScheduled() requires { id, body }.');
  const { id, body, type = 'schedule', attributes, tagName, initialData, uid, idempotencyKey } = options;
  const handle = init(agent, { id, ...(uid === undefined ? {} : { uid }) });
  return handle.dispatch({
    message: {
      kind: 'signal',
      type,
      body,
      attributes: { ...attributes, cron: tick.cron, scheduledAt: new Date(tick.scheduledTime).toISOString() },
      ...(tagName === undefined ? {} : { tagName }),
    },
    ...(initialData === undefined ? {} : { initialData }),
    idempotencyKey: idempotencyKey ?? scheduledIdempotencyKey(tick),
  });
}
