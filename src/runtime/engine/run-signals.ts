/**
 * Why a running response stops without settling: the runtime is stopping, the wake's time slice
 * is used up, or the attempt stalled. None is the submission's failure; the engine leaves the
 * submission open, and the response continues from its log (on the next start, the next wake or
 * a new attempt). Kept apart from response-run.ts so that declarations extending them (the testing
 * entry's simulated crash) need none of its machinery.
 */

/**
 * An attempt that ends here leaves its model step open, like a crash would: the next attempt
 * converges it and the model is told it was interrupted.
 */
export class RunInterrupted extends Error {}

/** The abort reason when a drain's grace period ends: the attempt is cut off and stays unsettled. */
export class RunStopped extends RunInterrupted {
  constructor() {
    super('[flue] The runtime is stopping; the submission continues on the next start.');
  }
}

/**
 * The abort reason when a model stream delivered nothing for `durability.modelIdleTimeoutMs`: the
 * attempt is abandoned and counts against `maxAttempts`, like an attempt a crash ended.
 */
export class AttemptStalled extends RunInterrupted {
  readonly idleMs: number;
  constructor(idleMs: number) {
    super(`[flue] The model stream delivered nothing for ${idleMs} ms; the attempt is abandoned.`);
    // Named, so the `submission_recovery` an abandoned attempt emits says what ended it.
    this.name = 'AttemptStalled';
    this.idleMs = idleMs;
  }
}

/** Thrown at a turn boundary when the wake's wall-time slice is used up; the attempt continues. */
export class RunYield extends Error {
  constructor() {
    super('[flue] The response yields at a turn boundary and continues on the next wake.');
  }
}
