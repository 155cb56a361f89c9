/**
 * Size limits of the runtime, in one place (docs/limits.md). They follow from the platform:
 * Durable Object SQLite refuses a value over 2 MB, Workers RPC refuses serialized values over
 * 32 MiB, and a Worker has 128 MB of memory. Anything larger is refused with
 * `PayloadTooLargeError` before it is stored, so accepted work is never lost to a size.
 */
import { PayloadTooLargeError } from './errors.ts';
import { jsonBytesAtMost } from './json-length.ts';

export const MiB = 1024 * 1024;

/** A delivered message: the UTF-8 size of its JSON, attachments' base64 and initialData included. */
export const MAX_MESSAGE_BYTES = 32 * MiB;
/** Per attachment, in base64 characters: roughly 10.5 MiB decoded. */
export const MAX_ATTACHMENT_BASE64_CHARS = 14 * MiB;
/** An HTTP admission body: the message plus room for its reserved siblings. */
export const MAX_REQUEST_BODY_BYTES = MAX_MESSAGE_BYTES + 256 * 1024;
/** A tool's output as the model sees it (its JSON text). */
export const MAX_TOOL_OUTPUT_BYTES = 24 * MiB;
/** One `usePersistentState` value, as JSON. */
export const MAX_STATE_VALUE_BYTES = 24 * MiB;
/** One durable `step.do()` value, as JSON. */
export const MAX_STEP_VALUE_BYTES = 24 * MiB;

const encoder = new TextEncoder();

/** Characters measured per step; the scratch buffer holds their worst case of 3 bytes each. */
const SIZE_STEP = 16 * 1024;
const scratch = new Uint8Array(3 * SIZE_STEP);

/**
 * Node's (and a Worker's with `nodejs_compat`) native UTF-8 length, where there is one: about three
 * times faster than stepping through the encoder on 20 MB, and it counts the same (a lone surrogate
 * as its 3-byte replacement).
 */
const nativeByteLength = (globalThis as { Buffer?: { byteLength(text: string, encoding: 'utf8'): number } }).Buffer?.byteLength;

/**
 * UTF-8 size of a string without allocating its encoding. A lone surrogate counts 3 bytes (its
 * replacement character), a pair 4.
 */
export function utf8Size(text: string): number {
  // One step (every admission's message, every row): measured in place, no buffer to collect.
  if (text.length <= SIZE_STEP) return encoder.encodeInto(text, scratch).written;
  return nativeByteLength !== undefined ? nativeByteLength(text, 'utf8') : steppedUtf8Size(text);
}

/**
 * `utf8Size` where the host has no native length: large values are measured in steps through one
 * scratch buffer (several times faster than a character loop on 20 MB). A step never ends between
 * the two halves of a surrogate pair, so each pair counts 4 bytes, a lone one 3.
 */
export function steppedUtf8Size(text: string): number {
  let bytes = 0;
  for (let at = 0; at < text.length; ) {
    let end = Math.min(at + SIZE_STEP, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    bytes += encoder.encodeInto(text.slice(at, end), scratch).written;
    at = end;
  }
  return bytes;
}

/** UTF-8 size of a value's JSON (`undefined` counts as nothing). */
export function jsonSize(value: unknown): number {
  const text = JSON.stringify(value);
  return text === undefined ? 0 : utf8Size(text);
}

/** Throws when `size` exceeds `limit`. */
export function checkSize(field: string, size: number, limit: number, hint?: string): void {
  if (size > limit) throw new PayloadTooLargeError(field, size, limit, hint);
}

/** What a delivered message's size is the JSON of: the message, with initialData beside it. */
function deliveredValue(message: unknown, initialData: unknown): object {
  return initialData === undefined ? { message } : { message, initialData };
}

/** The size a delivered message counts for: its JSON with attachments' base64 and initialData. */
export function deliveredMessageSize(message: unknown, initialData?: unknown): number {
  return jsonSize(deliveredValue(message, initialData));
}

/**
 * Refuses a delivered message over `MAX_MESSAGE_BYTES`. Every admission is checked where it is sent
 * and where it is stored: a bound from a walk of the message clears the common one without writing
 * its JSON, and only a message that may be near the limit is measured exactly.
 */
export function checkDeliveredMessage(message: unknown, initialData?: unknown): void {
  const value = deliveredValue(message, initialData);
  if (jsonBytesAtMost(value, MAX_MESSAGE_BYTES)) return;
  checkSize('message', jsonSize(value), MAX_MESSAGE_BYTES);
}
