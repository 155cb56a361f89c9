/**
 * Named points the engine reports to an installed crash probe (the crash-injection harness of
 * `@flue/runtime/testing`). Production never installs one: each point costs one read of a global
 * slot, and `crashProbe()?.(…)` does not even build its argument when the slot is empty.
 *
 * A probe may throw; the engine code that reached the point then stops there, exactly as if the
 * process had died at that instruction. The probe also learns which engine reached the point, so
 * it can tell which runtime's store to freeze and cut that engine's work off (see
 * src/testing/crash-harness.ts).
 */

/** What a probe may do with the engine whose work reached a point: know it by identity, stop it. */
export interface ProbedEngine {
  stop(graceMs?: number): Promise<void>;
}

interface ProbeSite {
  /** The engine (one per runtime) whose work reached the point. */
  engine: ProbedEngine;
  agent: string;
  instanceId: string;
  submissionId: string;
}

export type ProbeEvent =
  /** The submission's row is committed (durably accepted); the queue has not been woken. */
  | (ProbeSite & { point: 'admission' })
  /** The first text or reasoning delta of a model call arrived (and was committed if due). */
  | (ProbeSite & { point: 'model' })
  /** A `defineTool` tool's `run` is about to be called (arguments already validated). */
  | (ProbeSite & { point: 'tool'; tool: string; toolCallId: string })
  /** A `step.do` found no record and is about to run its fn. */
  | (ProbeSite & { point: 'step-run'; tool: string; step: string; toolCallId: string })
  /** A `step.do` fn finished; its memo is not recorded yet (the at-least-once window). */
  | (ProbeSite & { point: 'step'; tool: string; step: string; toolCallId: string })
  /** A settlement is about to be committed (its records and the row update, in one transaction). */
  | (ProbeSite & { point: 'settlement'; outcome: string });

export type CrashProbe = (event: ProbeEvent) => void;

// A global symbol, so two copies of this module in one process (sources and a bundle) share it.
const SLOT = Symbol.for('flue.crashProbe');
type Slot = { [SLOT]?: CrashProbe };

export function crashProbe(): CrashProbe | undefined {
  return (globalThis as Slot)[SLOT];
}

/** Installs (or with `undefined` removes) the process-wide probe; returns the previous one. */
export function installCrashProbe(probe: CrashProbe | undefined): CrashProbe | undefined {
  const previous = (globalThis as Slot)[SLOT];
  if (probe === undefined) delete (globalThis as Slot)[SLOT];
  else (globalThis as Slot)[SLOT] = probe;
  return previous;
}
