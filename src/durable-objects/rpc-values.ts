/**
 * Values crossing the Worker ↔ Durable Object RPC. Workers RPC refuses serialized arguments and
 * results over 32 MiB, but streams a ReadableStream with flow control whatever its length, so a
 * value whose JSON is large travels as a stream of its UTF-8 JSON instead.
 */
import { jsonBytesAtMost } from '../runtime/common/json-length.ts';

/** Past this much JSON a value is streamed; well below the RPC cap and the object's memory. */
export const STREAM_VALUE_BYTES = 4 * 1024 * 1024;

/** UTF-16 units per stream chunk: at most 3 bytes each, so chunks stay around 768 KiB. */
const SLICE_UNITS = 256 * 1024;

export interface JsonStream {
  readonly flueJsonStream: ReadableStream<Uint8Array>;
}

/** A value as sent over RPC: itself, or its JSON as a stream when large. */
export type Packed<T> = T | JsonStream;

const encoder = new TextEncoder();

/** What a sender passes to or returns from an RPC method. Large values must be JSON data. */
export function packValue<T>(value: T): Packed<T> {
  if (value === null || typeof value !== 'object') return value;
  // Every admission and every poll answer crosses here: a bound from a walk decides the common case
  // without writing the value's JSON (which the RPC would then serialize again).
  if (jsonBytesAtMost(value, STREAM_VALUE_BYTES)) return value;
  const text = JSON.stringify(value);
  if (text.length * 3 <= STREAM_VALUE_BYTES || encoder.encode(text).byteLength <= STREAM_VALUE_BYTES) return value;
  return { flueJsonStream: textStream(text) };
}

/** What a receiver does with a packed value: read the stream back to the value, if it is one (only then asynchronously). */
export function unpackValue<T>(packed: Packed<T>): T | Promise<T> {
  if (!isJsonStream(packed)) return packed;
  return new Response(packed.flueJsonStream).text().then((text) => JSON.parse(text) as T);
}

function isJsonStream(value: unknown): value is JsonStream {
  return typeof value === 'object' && value !== null && (value as Partial<JsonStream>).flueJsonStream instanceof ReadableStream;
}

/** A byte stream of `text` as UTF-8, encoded a slice at a time as the reader pulls. */
function textStream(text: string): ReadableStream<Uint8Array> {
  let position = 0;
  return new ReadableStream({
    type: 'bytes',
    pull(controller) {
      if (position >= text.length) {
        controller.close();
        return;
      }
      let end = Math.min(text.length, position + SLICE_UNITS);
      // Never split a surrogate pair: each half alone would encode as U+FFFD.
      const last = text.charCodeAt(end - 1);
      if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
      controller.enqueue(encoder.encode(text.slice(position, end)));
      position = end;
    },
  });
}
