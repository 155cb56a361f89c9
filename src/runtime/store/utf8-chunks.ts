/**
 * A string's UTF-8 bytes in chunks of exactly `chunkBytes` (the last one shorter), encoded a chunk
 * at a time into one small buffer. Encoding a 20 MB value whole allocates its 20 MB encoding first
 * and walks it again to cut the chunks; here the buffer holds one chunk and stays in cache, which
 * costs about half the CPU of the whole encoding on this kind of machine. The chunks are the same
 * bytes `TextEncoder.encode(text)` cut every `chunkBytes`: a chunk may end inside a character.
 */

const encoder = new TextEncoder();

/** The most UTF-8 bytes one code point takes. */
const MAX_CODE_POINT_BYTES = 4;

/**
 * Calls `emit` with each chunk in order (a view of a buffer reused for the next chunk: the callee
 * copies what it keeps) and answers the number of bytes in all.
 */
export function encodeInChunks(text: string, chunkBytes: number, emit: (chunk: Uint8Array, index: number) => void): number {
  if (!Number.isInteger(chunkBytes) || chunkBytes < MAX_CODE_POINT_BYTES) {
    throw new RangeError(`chunkBytes must be an integer of at least ${MAX_CODE_POINT_BYTES}, got ${chunkBytes}`);
  }
  // One chunk, plus room for the character that crosses its end.
  const buffer = new Uint8Array(chunkBytes + MAX_CODE_POINT_BYTES - 1);
  let filled = 0;
  let index = 0;
  let total = 0;
  for (let at = 0; at < text.length; ) {
    // As many characters as the room left has bytes: encodeInto stops before the first that does
    // not fit. A slice that ends between the halves of a surrogate pair never reaches its lone
    // first half: the characters before it take at least one byte each and it would take three.
    const room = buffer.length - filled;
    const { read, written } = encoder.encodeInto(text.slice(at, at + room), buffer.subarray(filled));
    at += read;
    filled += written;
    if (filled >= chunkBytes) {
      emit(buffer.subarray(0, chunkBytes), index++);
      total += chunkBytes;
      buffer.copyWithin(0, chunkBytes, filled);
      filled -= chunkBytes;
    }
  }
  if (filled > 0) {
    emit(buffer.subarray(0, filled), index);
    total += filled;
  }
  return total;
}
