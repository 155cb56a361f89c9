/**
 * Why a running response stops without settling: the runtime is stopping, or the wake's time
 * slice is used up. Neither is a failure; the engine leaves the submission for the next start or
 * wake, and the response continues from its log. Kept apart from response-run.ts so that
 * declarations extending them (the testing entry's simulated crash) need none of its machinery.
 */

/** The abort reason when a drain's grace period ends: the attempt is cut off and stays unsettled. */
export class RunStopped extends Error {
  constructor() {
    super('[flue] The runtime is stopping; the submission continues on the next start.');
  }
}

/** Thrown at a turn boundary when the wake's wall-time slice is used up; the attempt continues. */
export class RunYield extends Error {
  constructor() {
    super('[flue] The response yields at a turn boundary and continues on the next wake.');
  }
}
