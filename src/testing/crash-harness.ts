/**
 * `crashHarness()`: crash-injection for your own agents, on Node. Arm a named point, let the
 * runtime die there, restart it on the same SQLite file, and check that every submission settled
 * exactly once and how often each tool body and durable step ran.
 *
 * How a crash is simulated in-process. A process that dies between two SQLite transactions leaves
 * exactly the committed transactions behind, and nothing it would have done next happens. At the
 * armed point the harness therefore, synchronously and before the engine code goes on:
 *   1. stops the dying runtime's engine with no grace: it takes no new work, and every running
 *      response is aborted as a drain (never as an abort or a failure), so nothing settles;
 *   2. freezes that runtime's store: every later SQL statement of it throws, so nothing more is
 *      persisted, and closes its database handle (a dead process holds no file);
 *   3. clears the process-wide runtime slot, so `dispatch()`/`init()` see no runtime until
 *      `restart()`;
 *   4. throws a `SimulatedCrashError` from the point, so the code that reached it stops there.
 * `restart()` then runs `start()` (src/node/start.ts) again on the same file, and recovery runs
 * exactly as after a real crash. The engine reports its named points through a global probe
 * (src/runtime/store/crash-probe.ts) that costs one slot read when no harness is installed.
 *
 * Limits of the simulation: code of the dead runtime that is already running and ignores its abort
 * signal (a tool body awaiting something else) keeps running in this process, though nothing it
 * does reaches the store; and `read()` calls started before the crash never resolve — read again
 * after `restart()`. The SIGKILL child-process tests in test/crash/ cover real process death.
 *
 * Counting. Tool runs and step runs are counted by the probe in this process, across every
 * runtime the harness started (the dead one included): a tool run counts when its `run` is
 * called, a step run when `step.do` calls its fn (a replayed step does not count). Settlements are
 * counted from the log: the `submission_settled` records of each submission, so a double
 * settlement would show as 2.
 *
 * Node only: the Node host is imported when a harness is created, so this module can be imported
 * (for its types, or beside the scripted provider) inside workerd.
 */
import type { Provider } from '../runtime/model/model-types.ts';
import { type ProbeEvent, type ProbedEngine, crashProbe, installCrashProbe } from '../runtime/store/crash-probe.ts';
import type { ConversationEngine } from '../runtime/engine/engine.ts';
import { ConversationView } from '../runtime/engine/conversation-view.ts';
import { FlueError } from '../runtime/common/errors.ts';
import { type Agent, AgentRegistry } from '../runtime/authoring/identity.ts';
import { render, renderDelegate, type RenderResult } from '../runtime/authoring/render.ts';
import { RunStopped } from '../runtime/engine/run-signals.ts';
import { type FlueRuntime, clearRuntime, configuredRuntime } from '../runtime/host/runtime.ts';
import { type SqlDriver, SqlStore, type SqlValue } from '../runtime/store/sql-store.ts';
import type { DeliveredMessage } from '../runtime/common/types.ts';
import type * as NodeHost from '../node/index.ts';

// ── Public types ─────────────────────────────────────────────────────────────────────────────

export type CrashPointName = 'admission' | 'model' | 'tool' | 'step' | 'settlement';

/** Narrows where an armed point fires; every given field must match. */
export interface CrashPointFilter {
  /** Only work of this agent (one of the harness's agents). */
  agent?: Agent;
  /** Only work of this agent instance id. */
  id?: string;
  /** Fire the n-th time the point is reached after arming (default 1): e.g. the 2nd model call. */
  nth?: number;
}

/** How long an armed point may take to be reached. */
export interface CrashPointDeadline {
  /**
   * Milliseconds (default 20 000) from arming, or from the `restart()` after it, within which the
   * point must be reached; past it `crashed` and `settle()` reject with `CrashPointNotReachedError`.
   * Catches work that hangs, where nothing settles and the runtime never goes idle.
   */
  timeoutMs?: number;
}

export type CrashPoint = CrashPointDeadline &
  /** After admission: the submission is durably accepted, its queue not yet woken (dispatch() rejects). */
  (
    | ({ point: 'admission' } & CrashPointFilter)
    /** Mid model stream: after the first text or reasoning delta of a model call. */
    | ({ point: 'model' } & CrashPointFilter)
    /** Inside the named tool: as its `run` starts (arguments already validated). */
    | ({ point: 'tool'; name: string } & CrashPointFilter)
    /** Inside `step.do(name)` of the named tool: after its fn finished, before its memo is recorded. */
    | ({ point: 'step'; tool: string; name: string } & CrashPointFilter)
    /** During settlement: just before the settlement is committed. */
    | ({ point: 'settlement' } & CrashPointFilter)
  );

/** Where a crash happened. */
export interface CrashInfo {
  point: CrashPointName;
  agent: string;
  instanceId: string;
  submissionId: string;
  tool?: string;
  step?: string;
  toolCallId?: string;
  /** 1 for the harness's first crash, 2 for the next… */
  crash: number;
}

export interface SubmissionReport {
  id: string;
  agent: string;
  instanceId: string;
  /** `null` while unsettled. */
  outcome: 'completed' | 'failed' | 'aborted' | null;
  /** `submission_settled` records of this submission in the log: exactly 1 once settled. */
  settlements: number;
  attempts: number;
}

export interface CrashReport {
  /** Every submission of the store, in admission order. */
  submissions: SubmissionReport[];
  /** Runs started per tool name. */
  toolRuns: Record<string, number>;
  /** fn executions per `tool/step` (replays excluded). */
  stepRuns: Record<string, number>;
  /** Every crash the harness caused, in order. */
  crashes: CrashInfo[];
}

export interface CrashHarnessOptions {
  agents: NodeHost.StartOptions['agents'];
  providers?: readonly Provider[];
  /** Passed to `start()`; default `process.env`. */
  env?: Record<string, string | undefined>;
  /** The SQLite file; default one in a fresh temporary directory that `close()` removes. */
  path?: string;
}

export interface SettleOptions {
  /** Default 30 000. */
  timeoutMs?: number;
}

export interface CrashHarness {
  /** The SQLite file every runtime of this harness opens. */
  readonly path: string;
  /** True while a runtime is configured (false between a crash and `restart()`, and after `close()`). */
  readonly up: boolean;
  /** Arms one point: the next time it is reached (or the `nth` time), the runtime dies there. */
  crashAt(point: CrashPoint): void;
  /**
   * The armed point's crash. Rejects with `CrashPointNotReachedError`, naming the point, as soon as
   * the runtime goes idle without reaching it (every submission settled, or the rest can make no
   * progress) or its `timeoutMs` passes; throws `CrashHarnessError` when nothing was armed.
   */
  readonly crashed: Promise<CrashInfo>;
  /** `start()` again on the same file after a crash: recovery runs. */
  restart(): Promise<void>;
  /**
   * Waits until every submission settled, then reports. Rejects if the runtime is down or dies
   * while waiting, and with `CrashPointNotReachedError` if an armed point was never reached.
   */
  settle(options?: SettleOptions): Promise<CrashReport>;
  /** What the store and the counters say right now. */
  report(): CrashReport;
  /** Stops the runtime (if up), removes the probe, and deletes the default temporary file. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Misuse of the harness (unknown tool, nothing armed, runtime down…). */
export class CrashHarnessError extends FlueError {
  constructor(message: string) {
    super('crash_harness', { message: `[flue] crashHarness: ${message}` });
    this.name = 'CrashHarnessError';
  }
}

/** Why an armed point counts as missed: what the runtime was doing instead. */
type Missed =
  | { why: 'settled'; submissions: number }
  | { why: 'idle'; open: readonly string[] }
  | { why: 'timeout'; timeoutMs: number; open: readonly string[] };

/** An armed crash point was not reached: the runtime went idle, or its deadline passed. */
export class CrashPointNotReachedError extends FlueError {
  readonly armed: CrashPoint;
  constructor(armed: CrashPoint, missed: Missed) {
    super('crash_point_not_reached', { message: `[flue] crashHarness: ${describePoint(armed)} was armed but ${describeMiss(missed)}` });
    this.name = 'CrashPointNotReachedError';
    this.armed = armed;
  }
}

/**
 * Thrown at the crash point (dispatch() rejects with it for an `admission` crash) and by every
 * statement of the dead runtime's store. A drain-stop to the engine, so nothing settles.
 */
export class SimulatedCrashError extends RunStopped {
  readonly crash: CrashInfo;
  constructor(crash: CrashInfo) {
    super();
    this.name = 'SimulatedCrashError';
    this.message = `[flue] The runtime died at a simulated crash (${describeCrash(crash)}); nothing it does afterwards is stored.`;
    this.crash = crash;
  }
}

// ── Implementation ────────────────────────────────────────────────────────────────────────────

const POINTS: readonly CrashPointName[] = ['admission', 'model', 'tool', 'step', 'settlement'];

/** One `start()` of the harness: its store can be frozen when it dies. */
interface Generation {
  flue: NodeHost.Flue;
  runtime: FlueRuntime;
  /** The runtime itself: on Node the engine is what start() configures (src/node/start.ts). */
  engine: ConversationEngine;
  /** The driver this harness handed start(): freezing it is what kills the generation's store. */
  driver: FreezableDriver;
  adapter: NodeHost.PersistenceAdapter;
  dead: boolean;
}

/** The runtime's SQL driver, with a switch that makes every later statement throw. */
class FreezableDriver implements SqlDriver {
  private readonly inner: SqlDriver;
  frozenBy: CrashInfo | undefined;

  constructor(inner: SqlDriver) {
    this.inner = inner;
  }

  private check(): void {
    if (this.frozenBy !== undefined) throw new SimulatedCrashError(this.frozenBy);
  }

  query(sql: string, ...params: SqlValue[]) {
    this.check();
    return this.inner.query(sql, ...params);
  }

  run(sql: string, ...params: SqlValue[]): void {
    this.check();
    this.inner.run(sql, ...params);
  }

  transaction<T>(fn: () => T): T {
    this.check();
    return this.inner.transaction(fn);
  }
}

interface Armed {
  spec: CrashPoint;
  identity: string | undefined;
  seen: number;
  /** Work existed since arming; going idle after that means the point was not reached. */
  sawWork: boolean;
  /** `fired`: the crash happened; `missed`: the runtime went idle or the deadline passed first. */
  state: 'armed' | 'fired' | 'missed';
  /** When the point counts as missed if still not reached (reset by a launch). */
  deadline: number;
  /** Admissions counted when the engine was last seen idle; `undefined` while it is busy. */
  idleAt: number | undefined;
  missed?: CrashPointNotReachedError;
  promise: Promise<CrashInfo>;
  resolve(info: CrashInfo): void;
  reject(error: Error): void;
}

// The node host is loaded through a computed specifier: a Worker bundle that imports this entry
// must not pull node:sqlite in.
const NODE_HOST = '@flue/runtime/node';

const DEFAULT_POINT_TIMEOUT_MS = 20_000;
/** How often an armed point's watch looks at the runtime. */
const WATCH_INTERVAL_MS = 20;

export async function crashHarness(options: CrashHarnessOptions): Promise<CrashHarness> {
  if (typeof options !== 'object' || options === null || !Array.isArray(options.agents) || options.agents.length === 0) {
    throw new CrashHarnessError('options.agents must list at least one agent: crashHarness({ agents: [MyAgent] }).');
  }
  if (crashProbe() !== undefined) {
    throw new CrashHarnessError('another crash harness is open in this process; close() it first.');
  }
  if (configuredRuntime() !== undefined) {
    throw new CrashHarnessError('a Flue runtime is already configured in this process; stop it first (the harness starts its own).');
  }
  const host = (await import(/* @vite-ignore */ NODE_HOST)) as typeof NodeHost;
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');

  // The same identities start() will register, so `agent` filters can be checked before a start.
  const registry = new AgentRegistry();
  const agents: Agent[] = [];
  for (const entry of options.agents) {
    const agent = typeof entry === 'function' ? entry : entry.agent;
    registry.register(agent, typeof entry === 'function' ? undefined : entry.name);
    agents.push(agent);
  }

  const tempDir = options.path === undefined ? mkdtempSync(join(tmpdir(), 'flue-crash-harness-')) : undefined;
  const path = options.path ?? join(tempDir!, 'flue.sqlite');
  const toolRuns: Record<string, number> = {};
  const stepRuns: Record<string, number> = {};
  const crashes: CrashInfo[] = [];
  const seenTools = new Set<string>();
  let declared: Set<string> | undefined;
  let current: Generation | undefined;
  /** Every generation by the engine a probe event names: events carry the engine, not its store. */
  const generations = new WeakMap<ProbedEngine, Generation>();
  let armed: Armed | undefined;
  let watch: ReturnType<typeof setInterval> | undefined;
  let admissions = 0;
  let closed = false;
  let inspector: { adapter: NodeHost.PersistenceAdapter; view: ConversationView } | undefined;

  /**
   * The file as the harness sees it, through its own connection and read view: it counts across
   * runtimes that died and while none is up, so it never reads through a runtime's engine.
   */
  const inspect = (): ConversationView => {
    if (inspector === undefined) {
      const adapter = host.sqlite(path);
      inspector = { adapter, view: new ConversationView(new SqlStore(adapter.connect() as SqlDriver)) };
    }
    return inspector.view;
  };
  const hasOpenWork = (): boolean => inspect().keysWithOpenWork().length > 0;
  const totalCount = (): number => inspect().submissions().length;

  const probe = (event: ProbeEvent): void => {
    const generation = generations.get(event.engine);
    if (current === undefined || generation !== current) {
      // A runtime this harness killed: its remaining code reaches no further point.
      if (generation?.driver.frozenBy !== undefined) throw new SimulatedCrashError(generation.driver.frozenBy);
      return;
    }
    if (event.point === 'tool') {
      seenTools.add(event.tool);
      toolRuns[event.tool] = (toolRuns[event.tool] ?? 0) + 1;
    } else if (event.point === 'step-run') {
      const key = `${event.tool}/${event.step}`;
      stepRuns[key] = (stepRuns[key] ?? 0) + 1;
      return;
    }
    if (event.point === 'admission') admissions++;
    if (armed !== undefined && armed.state === 'armed') {
      if (event.point === 'admission') armed.sawWork = true;
      if (event.point === 'settlement') setImmediate(checkIdle);
      if (matches(armed, event) && ++armed.seen >= (armed.spec.nth ?? 1)) die(current, event);
    }
  };

  /** The armed point was reached: the generation dies here (see the module header). */
  const die = (generation: Generation, event: ProbeEvent): never => {
    const info: CrashInfo = {
      point: event.point as CrashPointName,
      agent: event.agent,
      instanceId: event.instanceId,
      submissionId: event.submissionId,
      ...('tool' in event ? { tool: event.tool, toolCallId: event.toolCallId } : {}),
      ...('step' in event ? { step: event.step } : {}),
      crash: crashes.length + 1,
    };
    generation.dead = true;
    // Before the freeze: stop() wakes parked readers, which still read the store once.
    event.engine.stop(0).catch(() => undefined);
    generation.driver.frozenBy = info;
    clearRuntime(generation.runtime);
    generation.adapter.close();
    crashes.push(info);
    armed!.state = 'fired';
    armed!.resolve(info);
    throw new SimulatedCrashError(info);
  };

  const miss = (arm: Armed, missed: Missed = { why: 'settled', submissions: totalCount() }): CrashPointNotReachedError => {
    if (arm.missed === undefined) {
      arm.state = 'missed';
      arm.missed = new CrashPointNotReachedError(arm.spec, missed);
      arm.reject(arm.missed);
    }
    return arm.missed;
  };

  const checkIdle = (): void => {
    const arm = armed;
    if (arm === undefined || arm.state !== 'armed' || !arm.sawWork || current === undefined || current.dead) return;
    if (!hasOpenWork()) miss(arm);
  };

  const openSubmissions = (): string[] =>
    report()
      .submissions.filter((s) => s.outcome === null)
      .map((s) => `${s.id} (${s.agent}/${s.instanceId}, ${s.attempts} attempt(s))`);

  /**
   * Watches an armed point until it fires or is missed. Settling is seen at once (checkIdle after
   * each settlement); this catches the rest: a runtime that stops driving its queues with work
   * still open, and work that hangs until the deadline. Idle must hold across two looks with no
   * admission between them: a new submission's queue is woken from a later task than its admission.
   */
  const look = (): void => {
    const arm = armed;
    if (arm === undefined || arm.state !== 'armed' || closed) {
      clearInterval(watch);
      watch = undefined;
      return;
    }
    if (current === undefined || current.dead) return;
    if (Date.now() > arm.deadline) {
      miss(arm, { why: 'timeout', timeoutMs: arm.spec.timeoutMs ?? DEFAULT_POINT_TIMEOUT_MS, open: openSubmissions() });
      return;
    }
    if (!arm.sawWork || current.engine.busy) {
      arm.idleAt = undefined;
      return;
    }
    if (arm.idleAt !== admissions) {
      arm.idleAt = admissions;
      return;
    }
    const open = openSubmissions();
    miss(arm, open.length === 0 ? { why: 'settled', submissions: totalCount() } : { why: 'idle', open });
  };

  const launch = async (): Promise<void> => {
    const inner = host.sqlite(path);
    let driver: FreezableDriver | undefined;
    const adapter: NodeHost.PersistenceAdapter = {
      migrate: () => inner.migrate(),
      connect: async () => (driver = new FreezableDriver(await inner.connect())),
      close: () => inner.close(),
    };
    const flue = await host.start({
      agents: options.agents,
      db: adapter,
      ...(options.providers === undefined ? {} : { providers: options.providers }),
      ...(options.env === undefined ? {} : { env: options.env }),
    });
    const runtime = configuredRuntime()!;
    const engine = runtime as unknown as ConversationEngine;
    const generation: Generation = { flue, runtime, engine, driver: driver!, adapter, dead: false };
    generations.set(engine, generation);
    // start() already woke recovery, but it runs from a later task, after this assignment.
    current = generation;
    if (armed !== undefined && armed.state === 'armed') {
      if (hasOpenWork()) armed.sawWork = true;
      armed.deadline = Date.now() + (armed.spec.timeoutMs ?? DEFAULT_POINT_TIMEOUT_MS);
    }
  };

  installCrashProbe(probe);
  try {
    await launch();
  } catch (error) {
    installCrashProbe(undefined);
    if (tempDir !== undefined) rmSync(tempDir, { recursive: true, force: true });
    throw error;
  }

  const where = (): string => {
    const last = crashes.at(-1);
    return last === undefined ? 'a crash' : describeCrash(last);
  };

  const report = (): CrashReport => {
    const view = inspect();
    const settlements = new Map<string, number>();
    for (const stream of view.conversationKeys()) {
      for (const batch of view.batches(stream, -1)) {
        for (const record of batch.records) {
          if (record.type === 'submission_settled') settlements.set(record.submissionId, (settlements.get(record.submissionId) ?? 0) + 1);
        }
      }
    }
    const submissions = view.submissions().map((row) => {
      const stream = view.conversationInfo(row.conversation);
      return {
        id: row.id,
        agent: String(stream?.agent),
        instanceId: String(stream?.instanceId),
        outcome: row.outcome,
        settlements: settlements.get(row.id) ?? 0,
        attempts: row.attemptCount,
      };
    });
    return { submissions, toolRuns: { ...toolRuns }, stepRuns: { ...stepRuns }, crashes: [...crashes] };
  };

  const lab: CrashHarness = {
    path,
    get up() {
      return current !== undefined && !current.dead;
    },

    crashAt(point) {
      if (closed) throw new CrashHarnessError('crashAt() after close().');
      if (typeof point !== 'object' || point === null || !POINTS.includes(point.point)) {
        throw new CrashHarnessError(`crashAt() needs { point } with point one of ${POINTS.join(', ')}; got ${JSON.stringify(point)}.`);
      }
      if (armed !== undefined && armed.state === 'armed') {
        throw new CrashHarnessError(`${describePoint(armed.spec)} is still armed; one crash point at a time (await lab.crashed first).`);
      }
      if (point.nth !== undefined && (!Number.isInteger(point.nth) || point.nth < 1)) {
        throw new CrashHarnessError(`crashAt() nth must be a positive integer; got ${String(point.nth)}.`);
      }
      if (
        point.timeoutMs !== undefined &&
        (typeof point.timeoutMs !== 'number' || !(point.timeoutMs > 0) || !Number.isFinite(point.timeoutMs))
      ) {
        throw new CrashHarnessError(
          `crashAt() timeoutMs must be a positive, finite number of milliseconds; got ${String(point.timeoutMs)}.`,
        );
      }
      if (point.id !== undefined && (typeof point.id !== 'string' || point.id === '')) {
        throw new CrashHarnessError('crashAt() id must be a non-empty instance id.');
      }
      let identity: string | undefined;
      if (point.agent !== undefined) {
        if (!registry.has(point.agent)) {
          const name = typeof point.agent === 'function' && point.agent.name ? ` "${point.agent.name}"` : '';
          throw new CrashHarnessError(`crashAt() agent${name} is not one of the harness's agents.`);
        }
        identity = registry.identityOf(point.agent);
      }
      if (point.point === 'tool' || point.point === 'step') {
        const tool = point.point === 'tool' ? point.name : point.tool;
        if (point.point === 'step' && (typeof point.name !== 'string' || point.name === '')) {
          throw new CrashHarnessError("crashAt({ point: 'step' }) needs the step name: { point: 'step', tool, name }.");
        }
        declared ??= declaredTools(agents);
        if (typeof tool !== 'string' || (!declared.has(tool) && !seenTools.has(tool))) {
          const known = [...new Set([...declared, ...seenTools])].sort();
          throw new CrashHarnessError(
            `no agent of the harness declares a tool named ${JSON.stringify(tool)}` +
              ` (declared: ${known.length === 0 ? 'none' : known.join(', ')}). Tool names are the defineTool() names passed to useTool().`,
          );
        }
      }
      let resolve!: (info: CrashInfo) => void;
      let reject!: (error: Error) => void;
      const promise = new Promise<CrashInfo>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      // The rejection is reported by settle() too, so a test that never awaits crashed is not
      // failed by an unhandled rejection.
      promise.catch(() => undefined);
      const up = current !== undefined && !current.dead;
      armed = {
        spec: { ...point },
        identity,
        seen: 0,
        sawWork: up && hasOpenWork(),
        state: 'armed',
        deadline: Date.now() + (point.timeoutMs ?? DEFAULT_POINT_TIMEOUT_MS),
        idleAt: undefined,
        promise,
        resolve,
        reject,
      };
      clearInterval(watch);
      // The watch keeps no process alive: a script that is done may exit with a point armed.
      watch = setInterval(look, WATCH_INTERVAL_MS);
      watch.unref?.();
    },

    get crashed() {
      if (armed === undefined) throw new CrashHarnessError('nothing is armed; call crashAt() before awaiting crashed.');
      return armed.promise;
    },

    async restart() {
      if (closed) throw new CrashHarnessError('restart() after close().');
      if (current !== undefined && !current.dead) {
        throw new CrashHarnessError(
          'restart() is for a crashed runtime, and the runtime is up. Arm a point with crashAt() and await lab.crashed first.',
        );
      }
      await launch();
    },

    async settle(settleOptions = {}) {
      const timeoutMs = settleOptions.timeoutMs ?? 30_000;
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        if (closed) throw new CrashHarnessError('settle() after close().');
        if (current === undefined || current.dead) {
          throw new CrashHarnessError(
            `the runtime is down after ${where()}, with submissions still open; call restart() first, then settle().`,
          );
        }
        if (!hasOpenWork()) break;
        if (armed?.missed !== undefined) throw armed.missed;
        if (Date.now() > deadline) {
          throw new CrashHarnessError(`settle() timed out after ${timeoutMs} ms; still open: ${openSubmissions().join(', ')}.`);
        }
        await new Promise((resolveWait) => setTimeout(resolveWait, 15));
      }
      // The latest arming must have fired: a missed point fails the settle that would hide it.
      if (armed !== undefined && armed.state !== 'fired') throw miss(armed);
      return report();
    },

    report,

    async close() {
      if (closed) return;
      closed = true;
      clearInterval(watch);
      try {
        if (current !== undefined && !current.dead) await current.flue.stop();
      } finally {
        current = undefined;
        if (crashProbe() === probe) installCrashProbe(undefined);
        inspector?.adapter.close();
        if (tempDir !== undefined) rmSync(tempDir, { recursive: true, force: true });
      }
    },

    [Symbol.asyncDispose]() {
      return lab.close();
    },
  };
  return lab;

  function matches(arm: Armed, event: ProbeEvent): boolean {
    const spec = arm.spec;
    if (arm.identity !== undefined && event.agent !== arm.identity) return false;
    if (spec.id !== undefined && event.instanceId !== spec.id) return false;
    if (spec.point === 'tool') return event.point === 'tool' && event.tool === spec.name;
    if (spec.point === 'step') return event.point === 'step' && event.tool === spec.tool && event.step === spec.name;
    return event.point === spec.point;
  }
}

/**
 * Tool names the agents declare on a first render with an empty user message and no state, their
 * subagents' included. A tool declared only under other conditions is learned when it first runs.
 */
function declaredTools(agents: readonly Agent[]): Set<string> {
  const names = new Set<string>();
  const delivery: DeliveredMessage = { kind: 'user', body: '' };
  const visit = (result: RenderResult, depth: number): void => {
    for (const tool of result.tools) names.add(tool.name);
    if (depth >= 4) return;
    for (const subagent of result.subagents) {
      try {
        visit(renderDelegate(subagent, delivery), depth + 1);
      } catch {
        // A delegate that cannot render outside a real task: its tools are learned when they run.
      }
    }
  };
  for (const agent of agents) {
    try {
      visit(
        render(agent, {
          kind: 'root',
          scope: {
            instanceId: 'crash-harness',
            delivery,
            readState: () => ({ found: false }),
            setState: () => undefined,
            writeData: () => undefined,
            dispatch: () => Promise.reject(new Error('[flue] crashHarness renders agents only to list their tools.')),
          },
          props: { id: 'crash-harness' },
        }),
        0,
      );
    } catch {
      // An agent that cannot render without real state: its tools are learned when they run.
    }
  }
  return names;
}

function describePoint(point: CrashPoint): string {
  const nth = point.nth === undefined || point.nth === 1 ? '' : ` (occurrence ${point.nth})`;
  const scope = point.id === undefined ? '' : ` of instance "${point.id}"`;
  if (point.point === 'tool') return `crash point "tool" ${JSON.stringify(point.name)}${scope}${nth}`;
  if (point.point === 'step') return `crash point "step" ${JSON.stringify(`${point.tool}/${point.name}`)}${scope}${nth}`;
  return `crash point "${point.point}"${scope}${nth}`;
}

function describeMiss(missed: Missed): string {
  switch (missed.why) {
    case 'settled':
      return `never reached; all ${missed.submissions} submission(s) settled without reaching it.`;
    case 'idle':
      return `never reached; the runtime went idle with ${missed.open.length} submission(s) open that it does not drive: ${missed.open.join(', ')}.`;
    case 'timeout':
      return (
        `not reached within ${missed.timeoutMs} ms (crashAt timeoutMs); ` +
        (missed.open.length === 0 ? 'no submission is open.' : `still open: ${missed.open.join(', ')}.`)
      );
  }
}

function describeCrash(crash: CrashInfo): string {
  const what = crash.point === 'tool' ? ` in tool "${crash.tool}"` : crash.point === 'step' ? ` in step "${crash.tool}/${crash.step}"` : '';
  return `crash ${crash.crash} at "${crash.point}"${what}, ${crash.agent}/${crash.instanceId}, submission ${crash.submissionId}`;
}
