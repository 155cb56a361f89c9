/**
 * The `default` of a switch over a closed union. The argument's type is `never` only while every
 * member has its case, so a member added to the union fails to compile at each switch that has not
 * learned it yet, instead of falling through silently.
 */

/** For values only this code produces: one the types did not foresee is a bug, so it throws. */
export function unreachable(value: never, what: string): never {
  throw new Error(`[flue] Unexpected ${what}: ${JSON.stringify(value)}`);
}

/**
 * For values read back from storage or the wire, where a member the types do not know can be
 * real (a record a newer version wrote): the fold leaves it out, as it leaves out every member it
 * has no use for.
 */
export function skipUnknown(_value: never): void {}
