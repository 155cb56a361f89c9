/**
 * Every documented limit on its boundary (docs/limits.md, docs/http.md): a value exactly at the
 * limit is accepted and one unit past it refused, by the check that enforces it. A check that
 * refused at the limit (`>=` for `>`), measured characters for bytes, or used another number
 * fails its row. The transports' calls of these checks are covered beside them (router,
 * dispatch(), channels, the engine's admission).
 */
import { describe, expect, it } from 'vitest';
import {
  MAX_SIGNAL_ATTRIBUTES,
  MAX_SIGNAL_NAME_LENGTH,
  MAX_SIGNAL_TYPE_LENGTH,
  parseDeliveredMessage,
} from '../engine/delivered-message.ts';
import { MAX_IDEMPOTENCY_KEY_LENGTH, parseAdmissionFields } from '../host/admission-fields.ts';
import { readBoundedBody } from '../http/bounded-body.ts';
import { environment, returning } from '../tools/tool-runner.fixtures.ts';
import { runToolCall } from '../tools/tool-runner.ts';
import { createToolStep } from '../tools/tool-step.ts';
import { FlueHttpError, InvalidRequestError, PayloadTooLargeError } from './errors.ts';
import {
  MAX_FILENAME_LENGTH,
  MAX_INSTANCE_ID_LENGTH,
  MAX_JSON_DEPTH,
  MAX_MIME_TYPE_LENGTH,
  MAX_TOKEN_LENGTH,
  assertInstanceIdShape,
} from './input-limits.ts';
import {
  MAX_ATTACHMENT_BASE64_CHARS,
  MAX_MESSAGE_BYTES,
  MAX_REQUEST_BODY_BYTES,
  MAX_STEP_VALUE_BYTES,
  MAX_TOOL_OUTPUT_BYTES,
  MiB,
  checkDeliveredMessage,
  deliveredMessageSize,
} from './limits.ts';

const KiB = 1024;

/**
 * Text of exactly `bytes` UTF-8 bytes. Its head is two-byte characters, so a check counting
 * characters instead of bytes lets one past the limit through; the rest is one-byte text,
 * which V8 measures and stringifies fastest.
 */
function utf8Text(bytes: number): string {
  return 'é'.repeat(4 * KiB) + 'x'.repeat(bytes - 8 * KiB);
}

/** A user message whose delivered size (docs/limits.md) is exactly `bytes`. */
function messageOfSize(bytes: number, initialData?: unknown): { kind: 'user'; body: string } {
  const overhead = deliveredMessageSize({ kind: 'user', body: '' }, initialData);
  return { kind: 'user', body: utf8Text(bytes - overhead) };
}

/**
 * A POST whose body is `bytes` bytes, with its Content-Length declared or left to be counted,
 * streamed in 1 MiB chunks (so the count crosses the limit inside the last one).
 */
function upload(bytes: number, declared: boolean): Request {
  const body = new Uint8Array(bytes).fill(0x20);
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let at = 0; at < bytes; at += MiB) controller.enqueue(body.subarray(at, Math.min(at + MiB, bytes)));
      controller.close();
    },
  });
  const headers: Record<string, string> = declared ? { 'content-length': String(bytes) } : {};
  return new Request('http://flue.test/', { method: 'POST', body: stream, headers, duplex: 'half' } as RequestInit);
}

async function toolOutputOf(bytes: number): Promise<void> {
  // A string's JSON adds its two quotes.
  const outcome = await runToolCall(returning(utf8Text(bytes - 2)), {}, environment());
  if (outcome.isError) throw outcome.error;
}

async function stepValueOf(bytes: number): Promise<void> {
  const step = createToolStep({
    toolCallId: 'call_1',
    toolName: 'provision',
    lookup: () => ({ found: false }),
    record: async () => {},
    log: environment().log,
  });
  await step.do('big', () => utf8Text(bytes - 2));
}

const image = (fields: Record<string, unknown>) => ({
  kind: 'user',
  body: 'look',
  attachments: [{ type: 'image', data: 'iVBORw0K', mimeType: 'image/png', ...fields }],
});
const signal = (fields: Record<string, unknown>) => ({ kind: 'signal', type: 'note', body: 'hi', ...fields });

function nested(depth: number): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

interface Boundary {
  /** The limit as the docs name it. */
  limit: string;
  /** The number the docs give. */
  documented: number;
  /** The constant the check uses. */
  value: number;
  /** Runs the check on `size` (bytes, characters, levels or entries); throws to refuse. */
  check(size: number): unknown;
  /** What refuses one past the limit. */
  refusal: { payload: string } | { invalid: RegExp };
}

const sizeLimits: Boundary[] = [
  {
    limit: 'a delivered message',
    documented: 32 * MiB,
    value: MAX_MESSAGE_BYTES,
    check: (n) => checkDeliveredMessage(messageOfSize(n)),
    refusal: { payload: 'message' },
  },
  {
    limit: "one attachment's base64 data",
    documented: 14 * MiB,
    value: MAX_ATTACHMENT_BASE64_CHARS,
    check: (n) => parseDeliveredMessage(image({ data: 'A'.repeat(n) })),
    refusal: { payload: 'message.attachments[0].data' },
  },
  {
    limit: 'an HTTP admission body, Content-Length declared',
    documented: 32 * MiB + 256 * KiB,
    value: MAX_REQUEST_BODY_BYTES,
    check: (n) => readBoundedBody(upload(n, true), MAX_REQUEST_BODY_BYTES),
    refusal: { payload: 'request body' },
  },
  {
    limit: 'an HTTP admission body, counted while reading',
    documented: 32 * MiB + 256 * KiB,
    value: MAX_REQUEST_BODY_BYTES,
    check: (n) => readBoundedBody(upload(n, false), MAX_REQUEST_BODY_BYTES),
    refusal: { payload: 'request body' },
  },
  {
    limit: "a tool's output",
    documented: 24 * MiB,
    value: MAX_TOOL_OUTPUT_BYTES,
    check: toolOutputOf,
    refusal: { payload: 'Tool "echo" output' },
  },
  {
    limit: 'one durable step.do() value',
    documented: 24 * MiB,
    value: MAX_STEP_VALUE_BYTES,
    check: stepValueOf,
    refusal: { payload: 'Tool "provision" step "big" value' },
  },
];

const shapeLimits: Boundary[] = [
  {
    limit: 'instance id',
    documented: 512,
    value: MAX_INSTANCE_ID_LENGTH,
    check: (n) => assertInstanceIdShape('i'.repeat(n)),
    refusal: { invalid: /^id is 513 characters long; at most 512/ },
  },
  {
    limit: 'idempotencyKey',
    documented: 256,
    value: MAX_IDEMPOTENCY_KEY_LENGTH,
    check: (n) => parseAdmissionFields({ idempotencyKey: 'k'.repeat(n) }),
    refusal: { invalid: /^idempotencyKey must be a non-empty string of at most 256 characters/ },
  },
  {
    limit: 'uid',
    documented: 256,
    value: MAX_TOKEN_LENGTH,
    check: (n) => parseAdmissionFields({ uid: 'u'.repeat(n) }),
    refusal: { invalid: /^uid is 257 characters long/ },
  },
  {
    limit: 'initialData nesting',
    documented: 64,
    value: MAX_JSON_DEPTH,
    check: (n) => parseAdmissionFields({ initialData: nested(n) }),
    refusal: { invalid: /^initialData is nested more than 64 levels deep/ },
  },
  {
    limit: 'attachments[i].mimeType',
    documented: 127,
    value: MAX_MIME_TYPE_LENGTH,
    check: (n) => parseDeliveredMessage(image({ mimeType: `image/${'x'.repeat(n - 'image/'.length)}` })),
    refusal: { invalid: /^message\.attachments\[0\]\.mimeType must be a MIME type "type\/subtype" of at most 127 characters/ },
  },
  {
    limit: 'attachments[i].filename',
    documented: 255,
    value: MAX_FILENAME_LENGTH,
    check: (n) => parseDeliveredMessage(image({ filename: 'ü'.repeat(n) })),
    refusal: { invalid: /^message\.attachments\[0\]\.filename is 256 characters long/ },
  },
  {
    limit: 'signal type',
    documented: 256,
    value: MAX_SIGNAL_TYPE_LENGTH,
    check: (n) => parseDeliveredMessage(signal({ type: 't'.repeat(n) })),
    refusal: { invalid: /^message\.signal\.type is 257 characters long/ },
  },
  {
    limit: 'signal tagName',
    documented: 128,
    value: MAX_SIGNAL_NAME_LENGTH,
    check: (n) => parseDeliveredMessage(signal({ tagName: 't'.repeat(n) })),
    refusal: { invalid: /^message\.signal\.tagName is 129 characters long/ },
  },
  {
    limit: 'signal attribute key',
    documented: 128,
    value: MAX_SIGNAL_NAME_LENGTH,
    check: (n) => parseDeliveredMessage(signal({ attributes: { ['k'.repeat(n)]: 'v' } })),
    refusal: { invalid: /^message\.signal\.attributes key "k+…?" must be a valid XML attribute name .*at most 128 characters/ },
  },
  {
    limit: 'signal attributes',
    documented: 64,
    value: MAX_SIGNAL_ATTRIBUTES,
    check: (n) => parseDeliveredMessage(signal({ attributes: Object.fromEntries(Array.from({ length: n }, (_, i) => [`a${i}`, 'v'])) })),
    refusal: { invalid: /^message\.signal\.attributes has 65 entries; at most 64 are allowed/ },
  },
];

async function refusalOf(check: () => unknown): Promise<FlueHttpError> {
  const error = await Promise.resolve()
    .then(check)
    .then(
      () => undefined,
      (caught: unknown) => caught,
    );
  expect(error, 'one past the limit must be refused').toBeInstanceOf(FlueHttpError);
  return error as FlueHttpError;
}

describe.each([
  ['size limits (docs/limits.md)', sizeLimits],
  ['shape limits (docs/http.md)', shapeLimits],
])('%s', (_, rows) => {
  it.each(rows)('$limit: the limit itself is accepted, one past it refused', async ({ documented, value, check, refusal }) => {
    expect(value).toBe(documented);
    await check(value);
    const error = await refusalOf(() => check(value + 1));
    if ('payload' in refusal) {
      expect(error).toBeInstanceOf(PayloadTooLargeError);
      expect(error.status).toBe(413);
      expect(error.meta).toEqual({ field: refusal.payload, limit: value, size: value + 1 });
    } else {
      expect(error).toBeInstanceOf(InvalidRequestError);
      expect(error.details).toMatch(refusal.invalid);
    }
  });
});
