/**
 * What the scripted model says in the side-by-side benchmark, shared by the parent (which runs the
 * model server) and the measured children (which check every reply against it). No imports, so
 * loading it costs every runtime the same.
 *
 * Every exchange is: user `question <key>` → the model calls `lookup({ key })` → the tool returns
 * `{ key, value: 'value-of-<key>' }` → the model streams a 200-chunk reply whose first chunk quotes
 * that value. The model server finds the value in the tool result it was sent, so a reply can only
 * equal `expectedReply(key)` when the tool really ran and its result really reached the model.
 */

export const PROVIDER_ID = 'scripted';
export const MODEL_ID = 'bench-model';
export const SYSTEM_PROMPT = 'You answer questions. Use the lookup tool to find the value of a key, then answer.';
export const TOOL_NAME = 'lookup';
export const TOOL_DESCRIPTION = 'Look up a key and return its value.';
export const TEXT_CHUNKS = 200;
/** (a): turns in the one long conversation. */
export const TURNS = 20;
/** (b): one-turn conversations, and how many run at a time. */
export const FANOUT_CONVERSATIONS = 200;
export const FANOUT_CONCURRENCY = 8;
/** (a) and (b) first run this many discarded turns on a conversation of their own (see the child). */
export const WARMUP_TURNS = 3;
/** A question whose key starts with this is answered by a reply streamed over SLOW_STREAM_MS. */
export const SLOW_KEY_PREFIX = 'slow-';
export const SLOW_STREAM_MS = 10_000;

export function question(key: string): string {
  return `question ${key}`;
}

export function keyOfQuestion(text: string): string | undefined {
  return /question (\S+)/.exec(text)?.[1];
}

export function toolOutput(key: string): { key: string; value: string } {
  return { key, value: `value-of-${key}` };
}

export function valueInToolResult(text: string): string | undefined {
  return /(value-of-[A-Za-z0-9_-]+)/.exec(text)?.[1];
}

/** How every scripted reply starts (`replyChunks`). */
const REPLY_START = 'The answer is ';

/** The streamed reply: exactly TEXT_CHUNKS chunks, the first quoting the tool's value. */
export function replyChunks(value: string): string[] {
  const chunks = [`${REPLY_START}${value}.`];
  for (let i = 1; i < TEXT_CHUNKS; i++) chunks.push(` token${i}`);
  return chunks;
}

export function expectedReply(key: string): string {
  return replyChunks(toolOutput(key).value).join('');
}

/** A reply that answered several joined sends (a burst), split back into the scripted replies it holds. */
export function replyParts(reply: string): string[] {
  return reply.split(new RegExp(`(?=${REPLY_START})`));
}
