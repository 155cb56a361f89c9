/**
 * How streamed content is committed while it streams (the turn stream's deltas, a running tool's
 * progress lines): in batches, one row per flush: the first after 250 ms, then at doubling
 * intervals up to 2 s. Short streams cost one or two rows; a long one about one row every two
 * seconds, and a crash loses at most that much.
 */
export const DELTA_FLUSH_FIRST_MS = 250;
export const DELTA_FLUSH_MAX_MS = 2_000;
