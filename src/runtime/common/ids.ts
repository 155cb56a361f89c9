/**
 * Identifiers and payload identity. Web APIs only: this module runs on Node and in workerd.
 */

// Crockford base32: no I, L, O, U, so ids survive being read aloud or retyped.
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const TIME_CHARS = 10; // 48-bit millisecond timestamp
const RANDOM_CHARS = 16; // 80 random bits
const MAX_TIME = 2 ** 48 - 1;

/**
 * A ULID generator that is monotonic within (and across) milliseconds: when the clock has not
 * advanced — or went backwards — the previous random part is incremented instead of redrawn, so
 * ids from one generator always sort in creation order.
 */
export function createUlidGenerator(
  now: () => number = Date.now,
  fillRandom: (bytes: Uint8Array<ArrayBuffer>) => unknown = (bytes) => crypto.getRandomValues(bytes),
): () => string {
  const randomDigits = randomDigitSource(fillRandom);
  let lastTime = -1;
  // The time part of `lastTime`: ids minted in the same millisecond share it.
  let timeText = '';
  // Random part as base32 digit values, most significant first, so increment is a digit carry.
  let lastRandom: number[] = [];
  const codes = new Array<number>(RANDOM_CHARS);

  return function ulid(): string {
    const time = now();
    if (time > lastTime) {
      lastTime = time;
      timeText = encodeTime(time);
      lastRandom = randomDigits();
    } else if (!increment(lastRandom)) {
      // 80-bit overflow within one millisecond: borrow the next millisecond rather than repeat.
      lastTime += 1;
      timeText = encodeTime(lastTime);
      lastRandom = randomDigits();
    }
    // One string for the random part, not one per digit (ids are minted several times per turn).
    for (let i = 0; i < RANDOM_CHARS; i++) codes[i] = ALPHABET_CODES[lastRandom[i]!]!;
    return timeText + String.fromCharCode(...codes);
  };
}

/** The character codes of `ALPHABET`, by digit value. */
const ALPHABET_CODES = Array.from(ALPHABET, (char) => char.charCodeAt(0));

/** Where the process-wide generator draws its random bits: the Web Crypto API unless the host supplies its own. */
let idRandomness: (bytes: Uint8Array<ArrayBuffer>) => unknown = (bytes) => crypto.getRandomValues(bytes);

/**
 * The host's cryptographically secure random source for ids. The Node host supplies node:crypto's:
 * Node loads its Web Crypto object as a module of its own on first use, a cost at a cold start that
 * nothing else of a process may need.
 */
export function setIdRandomness(fill: (bytes: Uint8Array<ArrayBuffer>) => unknown): void {
  idRandomness = fill;
}

/** The process-wide generator behind `newId()`. */
export const ulid: () => string = createUlidGenerator(Date.now, (bytes) => idRandomness(bytes));

/** The millisecond timestamp a ULID was minted at. */
export function decodeUlidTime(id: string): number {
  let time = 0;
  for (const char of id.slice(0, TIME_CHARS).toUpperCase()) {
    const digit = ALPHABET.indexOf(char);
    if (digit < 0) throw new Error(`[flue] Not a ULID: ${JSON.stringify(id)}`);
    time = time * 32 + digit;
  }
  return time;
}

/** Every prefix the runtime mints; a closed set so a typo cannot create a new id family. */
export type IdPrefix = 'sub' | 'inst' | 'instance' | 'attempt' | 'conv' | 'msg' | 'inc' | 'err' | 'call' | 'turn' | 'tmr';

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid()}`;
}

export async function sha256Hex(text: string): Promise<string> {
  return sha256HexBytes(new TextEncoder().encode(text) as Uint8Array<ArrayBuffer>);
}

export async function sha256HexBytes(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', bytes);
  let hex = '';
  for (const byte of new Uint8Array(digest)) hex += byte.toString(16).padStart(2, '0');
  return hex;
}

/**
 * Frozen format: a redelivery after a deploy must derive the same id, so the
 * preimage and truncation never change.
 *
 * Keys posted over HTTP (`'http'`) hash under their own prefix. An HTTP client picks any key it
 * likes, so a shared namespace would let it take a key trusted code uses (an approval route's
 * `approval:<id>`) and turn that code's later, legitimate dispatch into a 409.
 */
export async function keyedSubmissionId(
  agent: string,
  id: string,
  key: string,
  transport: 'dispatch' | 'http' = 'dispatch',
): Promise<string> {
  const domain = transport === 'http' ? 'flue-submission-key/http' : 'flue-submission-key';
  const hex = await sha256Hex(`${domain}\n${agent}\n${id}\n${key}`);
  return `sub_ik_${hex.slice(0, 32)}`;
}

/**
 * Canonical JSON for identity comparison: object keys sorted, `undefined`-valued keys omitted
 * (explicit `undefined` counts as absent), otherwise `JSON.stringify` semantics (`toJSON`,
 * non-finite numbers → null, `undefined` in arrays → null). Returns `undefined` for a top-level
 * value JSON cannot represent, as `JSON.stringify` does, so absent and `null` stay distinct.
 */
export function stableJson(value: unknown): string | undefined {
  return serialize(value, new Set());
}

/** Deep equality over the JSON form, as used for idempotency-key payload identity. */
export function deepEqualJson(a: unknown, b: unknown): boolean {
  return stableJson(a) === stableJson(b);
}

// ── helpers ───────────────────────────────────────────────────────────────────────────────────

/**
 * Random base32 digits drawn from a block of random bytes: one `fill` call per 256 ids instead of
 * one per id. Filled on first use, never at module load (workerd forbids randomness in global scope).
 */
function randomDigitSource(fill: (bytes: Uint8Array<ArrayBuffer>) => unknown): () => number[] {
  const pool = new Uint8Array(RANDOM_CHARS * 256);
  let at = pool.length;
  return () => {
    if (at === pool.length) {
      fill(pool);
      at = 0;
    }
    const digits = new Array<number>(RANDOM_CHARS);
    // 256 is a multiple of 32, so masking keeps each digit uniform.
    for (let i = 0; i < RANDOM_CHARS; i++) digits[i] = pool[at++]! & 31;
    return digits;
  };
}

/** Adds one to a base32 digit array in place; false on overflow. */
function increment(digits: number[]): boolean {
  for (let i = digits.length - 1; i >= 0; i--) {
    if (digits[i] < 31) {
      digits[i] += 1;
      return true;
    }
    digits[i] = 0;
  }
  return false;
}

function encodeTime(time: number): string {
  if (!Number.isInteger(time) || time < 0 || time > MAX_TIME) {
    throw new Error(`[flue] Cannot encode ${time} as a ULID timestamp.`);
  }
  let out = '';
  let rest = time;
  for (let i = 0; i < TIME_CHARS; i++) {
    out = ALPHABET[rest % 32] + out;
    rest = Math.floor(rest / 32);
  }
  return out;
}

function serialize(value: unknown, seen: Set<object>): string | undefined {
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    value = (value as { toJSON(): unknown }).toJSON();
  }
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      throw new TypeError('[flue] Cannot serialize a BigInt as JSON.');
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
  }
  if (value === null) return 'null';
  const object = value as object;
  if (seen.has(object)) throw new TypeError('[flue] Cannot serialize a circular structure as JSON.');
  seen.add(object);
  try {
    if (Array.isArray(object)) {
      return `[${object.map((item) => serialize(item, seen) ?? 'null').join(',')}]`;
    }
    const parts: string[] = [];
    for (const key of Object.keys(object).sort()) {
      const item = serialize((object as Record<string, unknown>)[key], seen);
      if (item !== undefined) parts.push(`${JSON.stringify(key)}:${item}`);
    }
    return `{${parts.join(',')}}`;
  } finally {
    seen.delete(object);
  }
}
