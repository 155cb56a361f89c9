/**
 * Shape limits on caller input that every transport shares: identifiers, attachment metadata,
 * base64 and JSON values. Each check returns a predicate naming what is wrong ("contains the
 * control character U+0000 at index 6") or undefined, so the schemas and the plain-argument
 * checks word their `details` identically.
 */
import { InvalidRequestError } from './errors.ts';

/** Instance ids key conversations (and Durable Objects); longer ones are a caller mistake. */
export const MAX_INSTANCE_ID_LENGTH = 512;
/** Bound on `uid`, submission ids and attachment ids; framework-minted ones are far shorter. */
export const MAX_TOKEN_LENGTH = 256;
export const MAX_FILENAME_LENGTH = 255;
/** RFC 6838 §4.2: type and subtype names together stay within 127 characters. */
export const MAX_MIME_TYPE_LENGTH = 127;
/** Levels of arrays and objects in `initialData`; recursive walks downstream stay far from the stack limit. */
export const MAX_JSON_DEPTH = 64;
/**
 * Values visited in one `initialData` walk. JSON from HTTP is bounded by the body size; this
 * bounds a programmatic value whose shared references would make the walk exponential.
 */
export const MAX_JSON_VALUES = 1_000_000;

const CONTROL_RULE = 'control characters (U+0000–U+001F, U+007F–U+009F)';

export function codePointLabel(code: number): string {
  return `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
}

/**
 * The first reason `text` is not a well-formed, control-free string of at most `max` UTF-16
 * code units. Control characters and lone surrogates are refused because SQLite TEXT cuts a
 * string at a NUL and cannot hold a lone surrogate, so either would store a different key.
 */
export function textProblem(text: string, max: number): string | undefined {
  if (text.length > max) return `is ${text.length} characters long; at most ${max} are allowed`;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code <= 0x1f || (code >= 0x7f && code <= 0x9f)) {
      return `contains the control character ${codePointLabel(code)} at index ${i}; ${CONTROL_RULE} are not allowed`;
    }
    if (code >= 0xd800 && code <= 0xdfff) {
      const next = text.charCodeAt(i + 1);
      if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
      return `contains a lone surrogate ${codePointLabel(code)} at index ${i}; it must be well-formed UTF-16`;
    }
  }
  return undefined;
}

/** Throws InvalidRequestError when `text` fails textProblem; `field` names it in `details`. */
export function assertText(text: string, field: string, max: number, message: string): void {
  const problem = textProblem(text, max);
  if (problem !== undefined) throw new InvalidRequestError(message, `${field} ${problem}`);
}

/**
 * A present, non-empty instance id that could not be stored intact. (A missing or empty id is
 * checked before this, by each verb, with its own wording.)
 */
export function assertInstanceIdShape(id: string, field = 'id'): void {
  assertText(id, field, MAX_INSTANCE_ID_LENGTH, 'The instance id is malformed.');
}

/** Quotes caller text for a message, shortened so a huge input cannot inflate the response. */
export function quoted(text: string, max = 64): string {
  return JSON.stringify(text.length > max ? `${text.slice(0, max)}…` : text);
}

// RFC 6838 §4.2 restricted-name: a letter or digit, then letters, digits and !#$&-^_.+
const MIME_NAME = '[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*';
const MIME_TYPE_PATTERN = new RegExp(`^${MIME_NAME}/${MIME_NAME}$`);

/** A bare `type/subtype`: it is served back as `content-type`, so no parameters or whitespace. */
export function mimeTypeProblem(mimeType: string): string | undefined {
  if (mimeType.length <= MAX_MIME_TYPE_LENGTH && MIME_TYPE_PATTERN.test(mimeType)) return undefined;
  return `must be a MIME type "type/subtype" of at most ${MAX_MIME_TYPE_LENGTH} characters (letters, digits and !#$&-^_.+; no parameters or whitespace), got ${quoted(mimeType)}`;
}

const NOT_BASE64 = /[^A-Za-z0-9+/=]/;

/**
 * Strict standard base64: the alphabet, `=` padding only at the end (at most two), and a length
 * that is a multiple of 4. `atob` would reject some of these later as an untyped error and
 * tolerate others (whitespace) silently.
 */
export function base64Problem(data: string): string | undefined {
  const bad = NOT_BASE64.exec(data);
  if (bad !== null) {
    const code = data.charCodeAt(bad.index);
    return `must be base64: ${quoted(data[bad.index]!)} (${codePointLabel(code)}) at index ${bad.index} is not in the base64 alphabet`;
  }
  const pad = data.indexOf('=');
  if (pad !== -1 && (pad < data.length - 2 || pad === 0 || data.charCodeAt(data.length - 1) !== 0x3d)) {
    return 'must be base64: "=" padding may only end the data (at most two)';
  }
  if (data.length % 4 !== 0) return `must be base64: its length (${data.length}) is not a multiple of 4`;
  return undefined;
}

/**
 * Why `value` is not a JSON-compatible value at most MAX_JSON_DEPTH levels deep, found by an
 * iterative walk, so it is safe on input deep enough to overflow any recursive walk (valibot,
 * structuredClone, JSON.stringify) that follows it. Accepted: null, booleans, finite numbers,
 * strings, arrays and plain objects; `undefined` object properties (JSON drops them).
 */
export function jsonValueProblem(root: unknown, field: string): string | undefined {
  interface Frame {
    value: unknown;
    depth: number;
    parent: Frame | undefined;
    key: string | number | undefined;
    /** Set once the frame's children are pushed; popping it again leaves the path. */
    entered?: boolean;
  }
  const pathOf = (frame: Frame): string => {
    const keys: (string | number)[] = [];
    for (let at: Frame | undefined = frame; at?.key !== undefined; at = at.parent) keys.push(at.key);
    let path = field;
    for (const key of keys.reverse()) {
      path += typeof key === 'number' ? `[${key}]` : /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${quoted(key, 40)}]`;
    }
    return path;
  };
  const onPath = new Set<object>();
  const stack: Frame[] = [{ value: root, depth: 0, parent: undefined, key: undefined }];
  let visited = 0;
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    if (frame.entered) {
      onPath.delete(frame.value as object);
      stack.pop();
      continue;
    }
    if (++visited > MAX_JSON_VALUES) return `${field} has more than ${MAX_JSON_VALUES} values`;
    const { value } = frame;
    switch (typeof value) {
      case 'string':
      case 'boolean':
        stack.pop();
        continue;
      case 'number':
        if (!Number.isFinite(value)) return `${pathOf(frame)} is a non-finite number; ${field} must be JSON-compatible`;
        stack.pop();
        continue;
      case 'undefined':
        // Inside an array JSON would turn it into null; only object properties may be absent.
        if (frame.parent !== undefined && typeof frame.key === 'number') {
          return `${pathOf(frame)} is undefined; ${field} must be JSON-compatible`;
        }
        stack.pop();
        continue;
      case 'object':
        break;
      default:
        return `${pathOf(frame)} is a ${typeof value}; ${field} must be JSON-compatible (null, booleans, finite numbers, strings, arrays and plain objects)`;
    }
    if (value === null) {
      stack.pop();
      continue;
    }
    const isArray = Array.isArray(value);
    if (!isArray) {
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) {
        const name = (proto?.constructor as { name?: unknown } | undefined)?.name;
        return `${pathOf(frame)} is a ${typeof name === 'string' && name !== '' ? name : 'non-plain object'}; ${field} must be JSON-compatible (null, booleans, finite numbers, strings, arrays and plain objects)`;
      }
    }
    if (onPath.has(value)) return `${pathOf(frame)} is circular; ${field} must be JSON-compatible`;
    if (frame.depth >= MAX_JSON_DEPTH)
      return `${field} is nested more than ${MAX_JSON_DEPTH} levels deep; at most ${MAX_JSON_DEPTH} are allowed`;
    frame.entered = true;
    onPath.add(value);
    const depth = frame.depth + 1;
    if (isArray) {
      for (let i = (value as unknown[]).length - 1; i >= 0; i--)
        stack.push({ value: (value as unknown[])[i], depth, parent: frame, key: i });
    } else {
      const keys = Object.keys(value);
      for (let i = keys.length - 1; i >= 0; i--)
        stack.push({ value: (value as Record<string, unknown>)[keys[i]!], depth, parent: frame, key: keys[i]! });
    }
  }
  return undefined;
}

export function assertJsonValue(value: unknown, field: string): void {
  const problem = jsonValueProblem(value, field);
  if (problem !== undefined) throw new InvalidRequestError(`${field} is malformed.`, problem);
}
