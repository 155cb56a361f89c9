/**
 * Reading a request body under a size limit, shared by the agent router and channel routes: an
 * oversized body is refused with 413 as soon as that is known and is never held in memory.
 */
import { PayloadTooLargeError } from '../common/errors.ts';

/**
 * The body's bytes, refused with 413 as soon as it is known to exceed `limit`: from
 * Content-Length when sent, else while counting the stream.
 */
export async function readBoundedBody(request: Request, limit: number, field = 'request body'): Promise<Uint8Array<ArrayBuffer>> {
  const declared = Number(request.headers.get('content-length') ?? Number.NaN);
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  if (declared > limit) {
    await discard(reader, 0, limit);
    throw new PayloadTooLargeError(field, declared, limit);
  }
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await discard(reader, size, limit);
      throw new PayloadTooLargeError(field, size, limit);
    }
    parts.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const part of parts) {
    bytes.set(part, offset);
    offset += part.byteLength;
  }
  return bytes;
}

/**
 * Drops the rest of a refused body without keeping it. Answering while the client still uploads
 * breaks proxies in front of the Worker (wrangler dev answers 500 "Network connection lost"), so
 * a body of plausible size (up to four times the limit) is drained first; an absurd one is cut off.
 */
async function discard(reader: ReadableStreamDefaultReader<Uint8Array>, seen: number, limit: number): Promise<void> {
  let size = seen;
  try {
    while (size <= 4 * limit) {
      const { done, value } = await reader.read();
      if (done) return;
      size += value.byteLength;
    }
    await reader.cancel();
  } catch {
    // The client went away: nothing left to drain.
  }
}
