/**
 * What keeps a model request inside the model's context window whatever the history holds: the
 * token budget of a request and the render-time fit of the model context to that budget. The fit is a pure function of the
 * messages and the budget: nothing it does is stored, the log keeps every original, and the same
 * context always renders the same request.
 */
import type { ImageContent, Message, TextContent } from '@earendil-works/pi-ai';
import { estimateTokens, measureTokens } from './compaction.ts';
import { DOCUMENT_REF_PREFIX } from './documents.ts';
import { skipUnknown } from '../../shared/exhaustive.ts';

/** A budget never shrinks below this, however large the system prompt and tools are. */
const MIN_BUDGET_TOKENS = 1024;

/**
 * Input tokens the messages of one request may take: the window less the reserve (output and the
 * estimate's error) and less what the system prompt and tool definitions take.
 */
export function requestBudget(input: { contextWindow: number; reserveTokens: number; fixedTokens: number }): number {
  return Math.max(MIN_BUDGET_TOKENS, input.contextWindow - input.reserveTokens - input.fixedTokens);
}

/** Estimated tokens of a request's system prompt and tool definitions (four characters a token). */
export function fixedTokens(input: { systemPrompt?: string; tools?: readonly unknown[] }): number {
  const chars = (input.systemPrompt?.length ?? 0) + (input.tools === undefined ? 0 : jsonArrayLength(input.tools));
  return Math.ceil(chars / 4);
}

/** The JSON length of each tool object measured so far (tool specs are shared by every turn that offers them, and not modified). */
const jsonLengths = new WeakMap<object, number>();

/** `JSON.stringify(items).length`, each object item measured once: brackets, the items, the commas between. */
function jsonArrayLength(items: readonly unknown[]): number {
  if (items.length === 0) return 2;
  let chars = 1 + items.length;
  for (const item of items) {
    if (typeof item !== 'object' || item === null) {
      chars += (JSON.stringify(item) ?? 'null').length;
      continue;
    }
    let length = jsonLengths.get(item);
    if (length === undefined) {
      length = (JSON.stringify(item) ?? 'null').length;
      jsonLengths.set(item, length);
    }
    chars += length;
  }
  return chars;
}

/** One message may take at most this share of a request's budget before it is reduced. */
export function messageCap(budgetTokens: number): number {
  return Math.floor(budgetTokens / 2);
}

const CHARS_PER_TOKEN = 4;
/** Below this a reduced message keeps nothing useful; the last-resort shrinking stops here. */
const MIN_CAP_TOKENS = 256;
/** Room the marker of a reduced block takes (it is counted, so a reduced message stays under its cap). */
const MARKER_CHARS = 400;

function marker(role: Message['role'], cut: number): string {
  const about = `${cut} characters (about ${Math.ceil(cut / CHARS_PER_TOKEN)} tokens)`;
  switch (role) {
    case 'toolResult':
      return (
        `\n\n[… ${about} cut from the middle of this tool result so the request fits the model's context window. ` +
        'The conversation log keeps the full result; call the tool again with a narrower request (a range, a page, a filter) to read the part you need.]\n\n'
      );
    case 'user':
      return (
        `\n\n[… ${about} cut from the middle of this message so the request fits the model's context window. ` +
        'The conversation log keeps the full message; ask for the part you need if it matters.]\n\n'
      );
    case 'assistant':
    case 'system':
      return `\n\n[… ${about} cut from the middle of this earlier text so the request fits the model's context window.]\n\n`;
    default:
      return skipUnknown(role) ?? '';
  }
}

/** Text this short is never cut: its head, tail and marker would not be shorter than the text itself. */
const MIN_CUT_CHARS = 2 * MARKER_CHARS;

/**
 * Head and tail of `text` in at most `max` characters (the marker included), or the text itself
 * when it fits or is too short to gain from a cut.
 */
export function reduceText(text: string, max: number, role: Message['role']): string {
  if (text.length <= max || text.length <= MIN_CUT_CHARS) return text;
  const keep = Math.max(0, max - MARKER_CHARS);
  // Never split a surrogate pair: half a character is not valid text for a provider.
  let head = Math.ceil(keep / 2);
  if (head > 0 && isHighSurrogate(text.charCodeAt(head - 1))) head--;
  let tailStart = text.length - (keep - Math.ceil(keep / 2));
  if (tailStart < text.length && isLowSurrogate(text.charCodeAt(tailStart))) tailStart++;
  return text.slice(0, head) + marker(role, tailStart - head) + text.slice(tailStart);
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** Text blocks that can be cut: document references are pointers the loop resolves, never cut. */
function cuttable(block: TextContent | ImageContent): block is TextContent {
  return block.type === 'text' && !block.text.startsWith(DOCUMENT_REF_PREFIX);
}

/**
 * `message` with its text reduced to about `maxTokens` (head and tail of each long text block,
 * with a marker saying how much was cut and how to get the rest); the message itself when it fits.
 * Images, document references and tool-call arguments are left as they are.
 */
export function reduceMessage(message: Message, maxTokens: number): Message {
  const tokens = estimateTokens(message);
  if (tokens <= maxTokens) return message;
  // Only text can be cut: it shares what the message may keep once its images and other
  // uncuttable parts are counted, each text block in proportion to its length.
  const text = cuttableChars(message) / CHARS_PER_TOKEN;
  if (text === 0) return message;
  const ratio = Math.max(0, maxTokens - (tokens - text)) / text;
  let cut = false;
  const shrink = (text: string) => {
    const reduced = reduceText(text, Math.floor(text.length * ratio), message.role);
    if (reduced !== text) cut = true;
    return reduced;
  };
  const reduced = reducedContent(message, shrink);
  // Nothing was worth cutting: the message goes as it is (the same object, so a fit counts it as sent whole).
  return cut ? reduced : message;
}

/** `message` with `shrink` applied to each text it may cut (images, document references and tool calls stay). */
function reducedContent(message: Message, shrink: (text: string) => string): Message {
  const blocks = (content: readonly (TextContent | ImageContent)[]) =>
    content.map((block) => (cuttable(block) ? { ...block, text: shrink(block.text) } : block));
  switch (message.role) {
    case 'user':
      return { ...message, content: typeof message.content === 'string' ? shrink(message.content) : blocks(message.content) };
    case 'toolResult':
      return { ...message, content: blocks(message.content) };
    case 'assistant':
      return {
        ...message,
        content: message.content.map((block) =>
          block.type === 'text'
            ? { ...block, text: shrink(block.text) }
            : block.type === 'thinking'
              ? { ...block, thinking: shrink(block.thinking) }
              : block,
        ),
      };
    case 'system':
      return message;
    default:
      return skipUnknown(message) ?? message;
  }
}

/** Characters of the message's text that a reduction may cut (what `reduceMessage` shrinks). */
function cuttableChars(message: Message): number {
  const blocks = (content: string | readonly (TextContent | ImageContent)[]) =>
    typeof content === 'string' ? content.length : content.reduce((sum, block) => sum + (cuttable(block) ? block.text.length : 0), 0);
  switch (message.role) {
    case 'user':
    case 'toolResult':
      return blocks(message.content);
    case 'assistant':
      return message.content.reduce(
        (sum, block) => sum + (block.type === 'text' ? block.text.length : block.type === 'thinking' ? block.thinking.length : 0),
        0,
      );
    case 'system':
      return 0;
    default:
      return skipUnknown(message) ?? 0;
  }
}

/** Whether `messages` fit `budgetTokens` once each is reduced to its cap (nothing left out). */
export function contextFits(messages: readonly Message[], budgetTokens: number): boolean {
  const cap = messageCap(budgetTokens);
  let sum = 0;
  for (const message of messages) sum += Math.min(cap, estimateTokens(message));
  return sum <= budgetTokens;
}

/** The leading compaction summary of a model context, which a fit never leaves out. */
function isSummary(message: Message | undefined): boolean {
  return (
    message?.role === 'user' && typeof message.content === 'string' && message.content.startsWith('<compaction type="context_summary">')
  );
}

function omittedNotice(count: number): Message {
  return {
    role: 'user',
    content:
      `[${count} earlier message${count === 1 ? ' is' : 's are'} left out of this request so it fits the model's context window. ` +
      'The conversation log keeps them; what is below continues from there.]',
    timestamp: 0,
  };
}

export interface FittedContext {
  messages: Message[];
  /** Messages sent in a reduced form. */
  reduced: number;
  /** Messages left out (the oldest after any summary), replaced by one notice. */
  omitted: number;
}

function total(messages: readonly Message[]): number {
  let sum = 0;
  for (const message of messages) sum += estimateTokens(message);
  return sum;
}

/**
 * The model context as it is sent: within `budgetTokens` by the same estimate compaction uses.
 * First every message over half the budget is reduced; if the context still does not fit, the
 * oldest messages after the compaction summary are left out, never starting the rest at a tool
 * result (which would orphan it from its call), and a notice says so; if the smallest such rest
 * still does not fit (one step's calls and results), the reduction cap halves until it does. The
 * smallest rest is one model step with its tool results and what followed it, each message at 256
 * tokens: only a step with more results than the budget holds at that size stays over.
 */
export function fitContext(messages: readonly Message[], budgetTokens: number): FittedContext {
  const reduceAll = (list: readonly Message[], cap: number) => list.map((message) => reduceMessage(message, cap));
  const changed = (list: readonly Message[], offset: number) => list.filter((message, i) => message !== messages[offset + i]).length;
  let cap = messageCap(budgetTokens);
  const first = reduceAll(messages, cap);
  const sizes = first.map(estimateTokens);
  let sum = sizes.reduce((a, b) => a + b, 0);
  if (sum <= budgetTokens) return { messages: first, reduced: changed(first, 0), omitted: 0 };

  const head = isSummary(messages[0]) ? 1 : 0;
  const pinned = first.slice(0, head);
  // Walk the start of the kept rest forward until it fits: a user or assistant message, never a
  // tool result, which would lose the call it answers.
  for (let i = 0; i < head; i++) sum -= sizes[i]!;
  const pinnedTokens = total(pinned);
  let from = head;
  for (let i = head; i < messages.length; i++) {
    if (messages[i]!.role !== 'toolResult') {
      from = i;
      if (pinnedTokens + (i > head ? measureTokens(omittedNotice(i - head)) : 0) + sum <= budgetTokens) break;
    }
    sum -= sizes[i]!;
  }
  const omitted = from - head;
  const notice = omitted > 0 ? [omittedNotice(omitted)] : [];
  const originals = messages.slice(from);
  let rest = first.slice(from);
  // The smallest rest still over: shrink the cap, always reducing from the originals so a marker
  // counts what the log holds.
  while (pinnedTokens + total(notice) + total(rest) > budgetTokens && cap > MIN_CAP_TOKENS) {
    cap = Math.max(MIN_CAP_TOKENS, Math.floor(cap / 2));
    rest = reduceAll(originals, cap);
  }
  return { messages: [...pinned, ...notice, ...rest], reduced: changed(pinned, 0) + changed(rest, from), omitted };
}
