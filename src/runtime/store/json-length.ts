/**
 * Whether a value's JSON text would be longer than `limit` characters, counted as it would be
 * written (escapes aside, which only lengthen it) and only until it is: a large value costs no more
 * than `limit` to look at.
 */
export function jsonLongerThan(value: unknown, limit: number): boolean {
  let length = 0;
  const add = (n: number) => {
    length += n;
    return length > limit;
  };
  const walk = (item: unknown): boolean => {
    if (item === null || item === undefined) return add(4);
    switch (typeof item) {
      case 'string':
        return add(item.length + 2);
      case 'number':
      case 'boolean':
      case 'bigint':
        return add(String(item).length);
      case 'object': {
        // Brackets, then a comma before every member but the first.
        if (add(1)) return true;
        let first = true;
        if (Array.isArray(item)) {
          for (const element of item) {
            if ((!first && add(1)) || walk(element)) return true;
            first = false;
          }
          return add(1);
        }
        for (const [key, entry] of Object.entries(item)) {
          if (entry === undefined) continue;
          if (add(key.length + (first ? 3 : 4)) || walk(entry)) return true;
          first = false;
        }
        return add(1);
      }
      default:
        return false;
    }
  };
  return walk(value);
}
