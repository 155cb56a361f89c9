/**
 * Value helpers for the runtime: the shared predicates and describer (src/shared/values.ts), and
 * the one JSON normaliser every stored or model-bound value goes through.
 */
export { describeValue, isPlainObject, kindOf } from '../../shared/values.ts';
import { isPlainObject } from '../../shared/values.ts';

/** "array", "Map instance", "number": the bare kind, as the tool-return messages name it. */
export function bareKind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'object') {
    const name = (Object.getPrototypeOf(value) as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof name === 'string' && name !== '' ? `${name} instance` : 'object';
  }
  return typeof value;
}

/**
 * A deep copy of `value` as JSON-compatible data, matching what `JSON.parse(JSON.stringify(x))`
 * would give, but throwing (a `TypeError` naming the path) wherever that would silently lose data:
 * cycles, BigInt, functions, symbols, non-finite numbers, and class instances without `toJSON`
 * (a `Map` would become `{}`). `toJSON` results (Dates) are used like `JSON.stringify` does;
 * object keys holding `undefined` are dropped and array holes become `null`, as in JSON. A
 * top-level `undefined` stays `undefined` (callers decide whether it is allowed).
 */
export function toJsonSnapshot(value: unknown, root = 'value'): unknown {
  return snapshot(value, root, [], '');
}

function snapshot(value: unknown, path: string, ancestors: object[], key: string): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'undefined':
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`the non-finite number ${value} at ${path}`);
      return value;
    case 'bigint':
      throw new TypeError(`a BigInt at ${path}`);
    case 'function':
      throw new TypeError(`a function at ${path}`);
    case 'symbol':
      throw new TypeError(`a symbol at ${path}`);
  }
  if (value === null) return null;
  const object = value as object;
  if (ancestors.includes(object)) throw new TypeError(`a circular reference at ${path}`);
  const toJSON = (object as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') {
    return snapshot(toJSON.call(object, key), path, [...ancestors, object], key);
  }
  const inner = [...ancestors, object];
  if (Array.isArray(object)) {
    return Array.from(object, (item: unknown, index) => {
      const copy = snapshot(item, `${path}[${index}]`, inner, String(index));
      return copy === undefined ? null : copy;
    });
  }
  if (!isPlainObject(object)) {
    throw new TypeError(`a ${bareKind(object)} at ${path} (class instances do not round-trip through JSON; convert it to plain data)`);
  }
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(object)) {
    const copy = snapshot((object as Record<string, unknown>)[name], `${path}.${name}`, inner, name);
    if (copy === undefined) continue;
    // `__proto__` must stay an own data key, as JSON.parse would make it.
    Object.defineProperty(out, name, { value: copy, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/**
 * `toJsonSnapshot` for a value the runtime stores (`usePersistentState`, `useDataWriter`): a
 * top-level `undefined`, or anything `toJsonSnapshot` refuses, is an error naming `site`.
 */
export function jsonNormalize(value: unknown, site: string): unknown {
  let copy: unknown;
  try {
    copy = toJsonSnapshot(value);
  } catch (error) {
    throw new Error(`[flue] ${site} value is not JSON-serializable: ${(error as Error).message}`);
  }
  if (copy === undefined) throw new Error(`[flue] ${site} value is not JSON-serializable.`);
  return copy;
}
