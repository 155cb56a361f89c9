/**
 * The one validator for delivered messages (delivery.md §1). `dispatch()`, `init().dispatch()`,
 * `useDispatchMessage()`, the HTTP `POST /:id` body and hook `append` all go through here, so
 * every transport rejects the same input with the same `details`.
 */
import * as v from 'valibot';
import { InvalidRequestError, PayloadTooLargeError } from '../common/errors.ts';
import { isPlainObject } from '../common/values.ts';
import { MAX_FILENAME_LENGTH, base64Problem, mimeTypeProblem, quoted, textProblem } from '../common/input-limits.ts';
import { MAX_ATTACHMENT_BASE64_CHARS } from '../common/limits.ts';
import type { AgentAppendMessage, DeliveredMessage } from '../common/types.ts';

export { MAX_ATTACHMENT_BASE64_CHARS };

/**
 * Framework-authored signal types. Recovery and the `useDelivery()` cursor tell framework
 * narration from caller input by these, so no caller may forge them.
 */
export const RESERVED_SIGNAL_TYPES: readonly string[] = Object.freeze([
  'resources',
  'instructions',
  'environment',
  'stream_interrupted',
  'stream_continued',
  'submission_aborted',
  'submission_interrupted',
  'compaction',
  'memory',
  'timer',
]);

/** The signal a due `useTimer()` timer delivers (reserved above: no caller can forge one). */
export const TIMER_SIGNAL_TYPE = 'timer';

const RESERVED = new Set(RESERVED_SIGNAL_TYPES);

/** `tagName` is emitted unescaped as the XML tag, so it must be a plain XML name. */
export const SIGNAL_TAG_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
/** Attribute keys are emitted as XML attribute names, so they follow the same pattern. */
export const SIGNAL_ATTRIBUTE_KEY_PATTERN = SIGNAL_TAG_NAME_PATTERN;
export const MAX_SIGNAL_TYPE_LENGTH = 256;
/** Bound on `tagName` and on each attribute key. */
export const MAX_SIGNAL_NAME_LENGTH = 128;
export const MAX_SIGNAL_ATTRIBUTES = 64;

// Messages are predicates: the formatter prefixes them with the failing field's path.
const mustBeString = 'must be a string';

/** A check whose message is the problem `find` reports (undefined = valid). */
function refine<T>(find: (input: T) => string | undefined) {
  return v.check<T, (issue: v.CheckIssue<T>) => string>(
    (input) => find(input) === undefined,
    (issue) => find(issue.input) ?? 'is invalid',
  );
}

const boundedText = (max: number) => refine<string>((text) => textProblem(text, max));

const attachmentData = v.pipe(
  v.string(mustBeString),
  v.maxLength(MAX_ATTACHMENT_BASE64_CHARS, `exceeds ${MAX_ATTACHMENT_BASE64_CHARS} base64 characters`),
  // An empty attachment has no bytes to store; malformed base64 would fail decoding after admission.
  v.nonEmpty('must not be empty'),
  refine<string>(base64Problem),
);

const mimeType = v.pipe(v.string(mustBeString), refine<string>(mimeTypeProblem));

const filename = v.optional(v.pipe(v.string(mustBeString), boundedText(MAX_FILENAME_LENGTH)));

const imageAttachment = v.object({
  type: v.literal('image'),
  data: attachmentData,
  mimeType: v.pipe(
    mimeType,
    v.check((type) => /^image\//i.test(type), 'must be an image/* type for an image attachment'),
  ),
  filename,
});

const documentAttachment = v.object({
  type: v.literal('document'),
  data: attachmentData,
  mimeType: v.literal('application/pdf', 'must be "application/pdf" for a document attachment'),
  filename,
});

const attachment = v.pipe(
  v.variant('type', [imageAttachment, documentAttachment], (issue) =>
    issue.path ? 'must be "image" or "document"' : 'must be an object with type "image" or "document"',
  ),
  v.transform(dropUndefined),
);

const userMessage = v.object({
  kind: v.literal('user'),
  body: v.string(mustBeString),
  attachments: v.optional(v.array(attachment, 'must be an array of attachments')),
});

const signalEntries = {
  type: v.pipe(
    v.string(mustBeString),
    v.minLength(1, 'must be a non-empty string'),
    boundedText(MAX_SIGNAL_TYPE_LENGTH),
    v.check(
      (type) => !RESERVED.has(type),
      (issue) =>
        `must not be a reserved signal type ("${String(issue.input)}" is framework-authored; reserved: ${RESERVED_SIGNAL_TYPES.join(', ')})`,
    ),
  ),
  body: v.string(`${mustBeString} (JSON-stringify structured data)`),
  attributes: v.optional(
    v.pipe(
      // Plain objects only: valibot's record would take an array or a Map as an object.
      v.custom<Record<string, unknown>>(isPlainObject, 'must be an object of string values'),
      refine<Record<string, unknown>>(attributeKeysProblem),
      v.record(v.string(), v.string(mustBeString), 'must be an object of string values'),
    ),
  ),
  tagName: v.optional(
    v.pipe(
      v.string(mustBeString),
      boundedText(MAX_SIGNAL_NAME_LENGTH),
      v.regex(SIGNAL_TAG_NAME_PATTERN, `must be a valid XML name matching ${SIGNAL_TAG_NAME_PATTERN.source}`),
    ),
  ),
};

const signalMessage = v.object({ kind: v.literal('signal'), ...signalEntries });

const deliveredMessageSchema = v.pipe(
  // A variant issue carries a path only when it is about the discriminator key itself.
  v.variant('kind', [userMessage, signalMessage], (issue) =>
    issue.path ? 'must be "user" or "signal"' : 'must be an object with kind "user" or "signal"',
  ),
  v.transform(dropUndefined),
);

const appendMessageSchema = v.pipe(
  v.object(
    {
      kind: v.literal('signal', 'must be "signal" (hooks may append signals only, never user messages)'),
      ...signalEntries,
    },
    'must be an object with kind "signal"',
  ),
  v.transform(dropUndefined),
);

export interface ParseDeliveredMessageOptions {
  /** Accept the string shorthand for `{ kind: 'user', body }`. Default true; HTTP passes false. */
  allowString?: boolean;
}

/**
 * Validate and snapshot a delivered message. The result is a fresh object holding only the known
 * keys, so later mutation of the caller's value cannot change what was admitted.
 */
export function parseDeliveredMessage(input: unknown, options: ParseDeliveredMessageOptions = {}): DeliveredMessage {
  if (typeof input === 'string') {
    if (options.allowString ?? true) return { kind: 'user', body: input };
    throw invalid(
      'The delivered message is malformed.',
      'message must be an object with kind "user" or "signal"; the string shorthand is accepted by programmatic APIs only',
    );
  }
  const result = v.safeParse(deliveredMessageSchema, input);
  if (result.success) return result.output as DeliveredMessage;
  const prefix = isObject(input) && input.kind === 'signal' ? 'message.signal' : 'message';
  const issue = result.issues[0];
  // Too large is not malformed: it gets its own 413 (docs/limits.md).
  if (issue.type === 'max_length' && typeof issue.input === 'string' && isAttachmentData(issue)) {
    throw new PayloadTooLargeError(issuePath(issue, prefix), issue.input.length, MAX_ATTACHMENT_BASE64_CHARS, 'Send a smaller attachment.');
  }
  throw invalid('The delivered message is malformed.', describeIssue(issue, prefix));
}

/**
 * Validate a `useAgentStart`/`useAgentFinish` `append`. We throw InvalidRequestError (not a plain
 * Error) so a bad append carries the same class and `details` wording as a bad delivered signal.
 */
export function parseAppendMessage(input: unknown): AgentAppendMessage {
  const result = v.safeParse(appendMessageSchema, input);
  if (result.success) return result.output as AgentAppendMessage;
  throw invalid('The appended message is malformed.', describeIssue(result.issues[0], 'append'));
}

export interface RenderableSignal {
  type: string;
  body: string;
  attributes?: Record<string, string>;
  tagName?: string;
}

/**
 * The model-facing text of a signal: `type` first, then attributes in insertion order. Names are
 * emitted unescaped, so a tag or key that is not an XML name (a record stored before admission
 * checked them) is dropped rather than allowed to forge framework narration.
 */
export function renderSignal(signal: RenderableSignal): string {
  const tag = signal.tagName !== undefined && isXmlName(signal.tagName) ? signal.tagName : 'signal';
  let attributes = ` type="${escapeAttribute(signal.type)}"`;
  for (const [key, value] of Object.entries(signal.attributes ?? {})) {
    if (!isXmlName(key)) continue;
    attributes += ` ${key}="${escapeAttribute(String(value))}"`;
  }
  return `<${tag}${attributes}>\n${escapeText(signal.body)}\n</${tag}>`;
}

// ── helpers ───────────────────────────────────────────────────────────────────────────────────

function invalid(message: string, details: string): InvalidRequestError {
  return new InvalidRequestError(message, details);
}

function escapeText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function escapeAttribute(text: string): string {
  return escapeText(text).replace(/"/g, '&quot;');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function isXmlName(name: string): boolean {
  return name.length <= MAX_SIGNAL_NAME_LENGTH && SIGNAL_TAG_NAME_PATTERN.test(name);
}

function attributeKeysProblem(attributes: Record<string, unknown>): string | undefined {
  const keys = Object.keys(attributes);
  if (keys.length > MAX_SIGNAL_ATTRIBUTES) return `has ${keys.length} entries; at most ${MAX_SIGNAL_ATTRIBUTES} are allowed`;
  const bad = keys.find((key) => !isXmlName(key));
  if (bad === undefined) return undefined;
  return `key ${quoted(bad)} must be a valid XML attribute name matching ${SIGNAL_ATTRIBUTE_KEY_PATTERN.source} of at most ${MAX_SIGNAL_NAME_LENGTH} characters`;
}

/** Explicit `undefined` optionals count as absent; keep them out of the admitted snapshot. */
function dropUndefined<T extends object>(value: T): T {
  for (const key of Object.keys(value) as (keyof T)[]) {
    if (value[key] === undefined) delete value[key];
  }
  return value;
}

/** `message.attachments[0].type must be …`: the first issue, named by its path. */
function describeIssue(issue: v.BaseIssue<unknown>, prefix: string): string {
  const path = issuePath(issue, prefix);
  // A missing required key surfaces as an object-schema issue on the key's own path.
  if (issue.type === 'object' && issue.input === undefined && (issue.path?.length ?? 0) > 0) {
    return `${path} is required`;
  }
  return `${path} ${issue.message}`;
}

function issuePath(issue: v.BaseIssue<unknown>, prefix: string): string {
  let path = prefix;
  for (const item of issue.path ?? []) {
    path += typeof item.key === 'number' ? `[${item.key}]` : `.${String(item.key)}`;
  }
  return path;
}

function isAttachmentData(issue: v.BaseIssue<unknown>): boolean {
  const path = issue.path ?? [];
  return path.length === 3 && path[0].key === 'attachments' && path[2].key === 'data';
}
