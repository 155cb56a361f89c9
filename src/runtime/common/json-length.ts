/**
 * A value's JSON size bounded from above by a walk of the value, without writing the JSON. The
 * walk stops once its answer is known, so a large value costs no more than the limit to look at.
 */

/** Plain data nested deeper than this is sized exactly instead. */
const MAX_WALK_DEPTH = 64;

/**
 * Whether the UTF-8 JSON of `value` is certainly at most `limit` bytes, from an upper bound: a
 * string unit is at most 6 bytes (a `\u` escape), a number at most 24, and every key, quote,
 * comma and bracket is counted. False means "not known", for anything but plain objects, arrays
 * and primitives (a `toJSON`, a typed array) or past the limit: the caller then measures exactly.
 */
export function jsonBytesAtMost(value: unknown, limit: number): boolean {
  let budget = limit;
  const walk = (item: unknown, depth: number): boolean => {
    switch (typeof item) {
      case 'string':
        budget -= item.length * 6 + 2;
        return budget >= 0;
      case 'number':
      case 'bigint':
        budget -= 24;
        return budget >= 0;
      case 'boolean':
      case 'undefined':
      case 'function':
      case 'symbol':
        budget -= 5;
        return budget >= 0;
      case 'object': {
        if (item === null) return (budget -= 4) >= 0;
        if (depth >= MAX_WALK_DEPTH) return false;
        if (Array.isArray(item)) {
          budget -= 2 + item.length;
          for (const element of item) if (!walk(element, depth + 1)) return false;
          return budget >= 0;
        }
        const prototype = Object.getPrototypeOf(item);
        if (prototype !== Object.prototype && prototype !== null) return false;
        // JSON.stringify writes what a `toJSON` returns, which the walk cannot see.
        if (typeof (item as { toJSON?: unknown }).toJSON === 'function') return false;
        budget -= 2;
        for (const key in item) {
          budget -= key.length * 6 + 4;
          if (!walk((item as Record<string, unknown>)[key], depth + 1)) return false;
        }
        return budget >= 0;
      }
    }
  };
  return walk(value, 0);
}
