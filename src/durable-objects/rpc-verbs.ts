/**
 * The conversation verbs of runtime/engine/verbs.ts across the Worker → Durable Object RPC: how
 * each crosses, the object's method types, what the object does with a call it receives, and how
 * the Worker sends one. Errors travel as envelopes (rpc-errors.ts), large values as streams of
 * their JSON (rpc-values.ts).
 */
import type { AdmissionRequest, VerbArgs, VerbName, VerbResult } from '../runtime/engine/verbs.ts';
import { raceAbort } from '../runtime/common/race-abort.ts';
import { promised } from '../runtime/common/promised.ts';
import { type RpcEnvelope, unwrap } from './rpc-errors.ts';
import { type Packed, packValue, unpackValue } from './rpc-values.ts';

/** How one verb crosses the Worker → Durable Object RPC. */
export interface RpcCrossing {
  /** The object's method (internal; the name agent classes may not define, see `extend()`). */
  method: `__flue${string}`;
  /** How a failed call names the verb to the caller. */
  label: string;
  /**
   * Where the instance id is: the first argument, or the admission request's `id` (which the
   * object then sets from the id it is addressed by).
   */
  instance?: 'request';
  /** Values that may be large travel as a stream of their JSON (rpc-values.ts): arguments, result. */
  stream?: 'args' | 'result';
  /** The last argument's `signal` stays with the caller: the Worker stops waiting, the object finishes its bounded wait. */
  abortable?: true;
}

/** Every verb of the engine has its crossing: a verb added there fails to compile until it has one here. */
export const CROSSINGS = {
  admit: { method: '__flueAdmit', label: 'dispatch()', instance: 'request', stream: 'args' },
  getInstance: { method: '__flueInstanceInfo', label: 'getAgentInstance()' },
  history: { method: '__flueHistory', label: 'history', stream: 'result' },
  childConversations: { method: '__flueChildConversations', label: 'child conversations', stream: 'result' },
  streamHead: { method: '__flueStreamHead', label: 'stream head' },
  updates: { method: '__flueUpdates', label: 'updates', stream: 'result', abortable: true },
  attachment: { method: '__flueAttachment', label: 'attachment' },
  abort: { method: '__flueAbort', label: 'handle.abort()' },
  usage: { method: '__flueUsage', label: 'getUsage()' },
  poll: { method: '__fluePoll', label: 'handle.read()', stream: 'result' },
  exportConversation: { method: '__flueExport', label: 'exportConversation()', stream: 'result' },
  importConversation: { method: '__flueImport', label: 'fork()', stream: 'args' },
} as const satisfies { [K in VerbName]: RpcCrossing };

export const VERB_NAMES = Object.keys(CROSSINGS) as VerbName[];

type Crossing<K extends VerbName> = (typeof CROSSINGS)[K];
type Tail<T extends unknown[]> = T extends [unknown, ...infer Rest] ? Rest : never;
type PackEach<T extends unknown[]> = { [I in keyof T]: Packed<T[I]> };
/** The arguments after the instance id (an admission sends its whole request, id included). */
type Sent<K extends VerbName> = Crossing<K> extends { instance: 'request' } ? VerbArgs<K> : Tail<VerbArgs<K>>;
type WireArgs<K extends VerbName> = Crossing<K> extends { stream: 'args' } ? PackEach<Sent<K>> : Sent<K>;
type WireResult<K extends VerbName> = Crossing<K> extends { stream: 'result' } ? Packed<VerbResult<K>> : VerbResult<K>;

/** The RPC surface every generated agent object exposes (names are internal). */
export type AgentObjectRpc = {
  [K in VerbName as Crossing<K>['method']]: (instanceId: string, ...args: WireArgs<K>) => Promise<RpcEnvelope<WireResult<K>>>;
};

/**
 * What an admission's answer carries besides its envelope: the object's `poll` for the admitted
 * conversation, as a stub. Calls on a stub an RPC returned belong to that call's session, so a
 * `read()` that follows its `dispatch()` in the same request makes one Durable Object request,
 * not two (Cloudflare bills each RPC session as one request).
 */
export type AdmissionSession = Pick<AgentObjectRpc, '__fluePoll'>;

/**
 * The object's side of one verb: its method name, and `serve`, which reads the arguments back,
 * has `call` run the verb with them and packs the result for the trip back. Chained rather than
 * awaited: a long poll waiting here holds no suspended frame of its own.
 */
export function receiveVerb(verb: VerbName): {
  method: string;
  serve(instanceId: string, wire: unknown[], call: (args: unknown[]) => unknown): unknown;
} {
  const crossing: RpcCrossing = CROSSINGS[verb];
  const run = (instanceId: string, sent: unknown[], call: (args: unknown[]) => unknown) => {
    // The object is addressed by the instance id: an admission's request gets that id.
    const args =
      crossing.instance === 'request' ? [{ ...(sent[0] as AdmissionRequest), id: instanceId }, ...sent.slice(1)] : [instanceId, ...sent];
    const result = call(args);
    return crossing.stream === 'result' ? Promise.resolve(result).then(packValue) : result;
  };
  return {
    method: crossing.method,
    serve(instanceId, wire, call) {
      if (crossing.stream !== 'args') return run(instanceId, wire, call);
      return Promise.all(wire.map((value) => unpackValue(value))).then((sent) => run(instanceId, sent, call));
    },
  };
}

/** The instance id a call addresses. */
export function instanceOf<K extends VerbName>(verb: K, args: VerbArgs<K>): string {
  return (CROSSINGS[verb] as RpcCrossing).instance === 'request' ? (args[0] as AdmissionRequest).id : (args[0] as string);
}

/**
 * The Worker's side of one verb: calls the object and reads a streamed value back. A failure the
 * object reports stays in the envelope (`unwrap` throws it); a failed transport rejects. A signal
 * (the caller's, or an `abortable` verb's option) never crosses: the Worker stops waiting instead.
 */
export function sendVerb<K extends VerbName>(
  stub: Pick<AgentObjectRpc, Crossing<K>['method']>,
  verb: K,
  args: VerbArgs<K>,
  signal?: AbortSignal,
): Promise<RpcEnvelope<VerbResult<K>>> {
  const crossing: RpcCrossing = CROSSINGS[verb];
  // Chained rather than awaited: a waiting read holds no suspended frame here.
  return promised(() => {
    let wire: unknown[] = crossing.instance === 'request' ? [...args] : args.slice(1);
    if (crossing.abortable) {
      const { signal: own, ...options } = wire.at(-1) as { signal?: AbortSignal };
      wire = [...wire.slice(0, -1), options];
      signal ??= own;
    }
    if (crossing.stream === 'args') wire = wire.map((value) => packValue(value));
    // Called on the stub itself: an RPC stub's methods are stubs too (`.call` would be a remote method).
    const pending = (stub as unknown as Record<string, (...wire: unknown[]) => Promise<RpcEnvelope<unknown>>>)[crossing.method]!(
      instanceOf(verb, args),
      ...wire,
    );
    const answered = signal === undefined ? pending : raceAbort(pending, signal);
    if (crossing.stream !== 'result') return answered as Promise<RpcEnvelope<VerbResult<K>>>;
    return answered.then(async (answer) => (answer.ok ? { ok: true, value: (await unpackValue(answer.value)) as VerbResult<K> } : answer));
  });
}

/** `sendVerb`, with the object's failure thrown as the typed error it was. */
export async function callVerb<K extends VerbName>(stub: AgentObjectRpc, verb: K, args: VerbArgs<K>): Promise<VerbResult<K>> {
  return unwrap(await sendVerb(stub, verb, args));
}
