/**
 * The pure parts of compaction a response checks every turn: option validation and defaults, the
 * threshold check, token estimates, and how a summary is rendered back into the model context.
 * Where to cut and the summarization request are summary-request.ts, which only code loaded on
 * first use imports. Running the summarization call, writing the record and emitting events belong
 * to the turn loop; nothing here does I/O.
 */
import type { Message, TextContent, ImageContent, Usage } from '@earendil-works/pi-ai';
import type { CompactionConfig } from '../common/types.ts';
import { describeValue } from '../common/values.ts';
import { skipUnknown } from '../../shared/exhaustive.ts';

// ── Options ───────────────────────────────────────────────────────────────────────────────────

const CONFIG_KEYS: readonly string[] = ['reserveTokens', 'keepRecentTokens', 'model', 'contextWindow'];

/**
 * Validates `useModel(…, { compaction })`. Zero token counts are accepted (the original source does;
 * its docs say "positive"). Fields set to `undefined` count as absent.
 */
export function validateCompactionConfig(value: unknown): false | CompactionConfig {
  if (value === false) return false;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(`[flue] Invalid compaction option: expected an object or false, got ${describeValue(value)}.`);
  }
  const config: CompactionConfig = {};
  for (const [key, field] of Object.entries(value)) {
    if (!CONFIG_KEYS.includes(key)) {
      throw new Error(`[flue] Unknown compaction option "${key}". Valid options: ${CONFIG_KEYS.join(', ')}.`);
    }
    if (field === undefined) continue;
    if (key === 'model') {
      if (typeof field !== 'string') {
        throw new Error(`[flue] Invalid compaction option "model": expected a "provider-id/model-id" string, got ${describeValue(field)}.`);
      }
      config.model = field;
      continue;
    }
    if (key === 'contextWindow') {
      if (typeof field !== 'number' || !Number.isInteger(field) || field < MIN_CONTEXT_WINDOW) {
        throw new Error(
          `[flue] Invalid compaction option "contextWindow": expected the model's context window in tokens, an integer ≥ ${MIN_CONTEXT_WINDOW}, got ${describeValue(field)}.`,
        );
      }
      config.contextWindow = field;
      continue;
    }
    if (typeof field !== 'number' || !Number.isInteger(field) || field < 0) {
      throw new Error(`[flue] Invalid compaction option "${key}": expected an integer ≥ 0, got ${describeValue(field)}.`);
    }
    if (key === 'reserveTokens') config.reserveTokens = field;
    else config.keepRecentTokens = field;
  }
  return config;
}

export interface CompactionSettings {
  /** The window compaction and the request fit hold the conversation to. */
  contextWindow: number;
  reserveTokens: number;
  keepRecentTokens: number;
  /** Absent ⇒ summarize with the session model. */
  model?: string;
}

export const DEFAULT_KEEP_RECENT_TOKENS = 8000;
const DEFAULT_RESERVE_TOKENS = 20000;
/** A smaller window leaves no room for a conversation beside the prompt and the reserve. */
const MIN_CONTEXT_WINDOW = 2048;
/** The clamp of `keepRecentTokens` to the window stops here, whatever the window and reserve. */
const MIN_KEEP_RECENT_TOKENS = 256;

/**
 * The context window assumed for a model whose metadata has none (a custom provider's model
 * declared without `contextWindow`, a Workers AI model id): small enough for the chat models in
 * common use today, so a request sized to it is accepted by nearly all of them.
 */
export const DEFAULT_CONTEXT_WINDOW = 32_768;

/** The model's context window, or the default when its metadata does not say (0 or absent). */
export function contextWindowOf(model: { contextWindow: number }): number {
  return model.contextWindow > 0 ? model.contextWindow : DEFAULT_CONTEXT_WINDOW;
}

/**
 * Fills defaults from the model's limits (an unknown window counts as the default one, a
 * configured one wins over both). The
 * default reserve shrinks for small context windows so that reserving it does not leave half the
 * window or less for the conversation; an explicit reserve is taken as given. The part kept
 * verbatim never exceeds a quarter of what the reserve leaves, so the summary, the kept part and
 * what comes next fit the window together.
 */
export function resolveCompactionSettings(
  config: CompactionConfig | undefined,
  model: { contextWindow: number; maxTokens: number },
): CompactionSettings {
  const window = config?.contextWindow ?? contextWindowOf(model);
  let reserveTokens = config?.reserveTokens;
  if (reserveTokens === undefined) {
    reserveTokens = Math.min(DEFAULT_RESERVE_TOKENS, model.maxTokens > 0 ? model.maxTokens : DEFAULT_RESERVE_TOKENS);
    if (reserveTokens * 2 >= window) {
      reserveTokens = Math.max(1024, Math.floor(window / 3));
    }
  }
  const settings: CompactionSettings = {
    contextWindow: window,
    reserveTokens,
    keepRecentTokens: Math.min(
      config?.keepRecentTokens ?? DEFAULT_KEEP_RECENT_TOKENS,
      Math.max(MIN_KEEP_RECENT_TOKENS, Math.floor((window - reserveTokens) / 4)),
    ),
  };
  if (config?.model !== undefined) settings.model = config.model;
  return settings;
}

// ── Token accounting ──────────────────────────────────────────────────────────────────────────

/** Characters per token, in every estimate here and in summary-request.ts. */
export const CHARS_PER_TOKEN = 4;
const IMAGE_TOKENS = 1200;

type TokenCounts = Pick<Usage, 'input' | 'output' | 'cacheRead' | 'cacheWrite' | 'totalTokens'>;

/** Tokens the last request occupied; some providers report no total, so fall back to the parts. */
export function contextTokens(usage: TokenCounts): number {
  return usage.totalTokens || usage.input + usage.output + usage.cacheRead + usage.cacheWrite;
}

/**
 * Each message's estimate, by the message: a conversation's messages are never modified once
 * folded, and every model step measures the whole context again (the compaction check and the
 * fit), so without this a step's cost would grow with the history's length.
 */
const estimates = new WeakMap<Message, number>();

/** Rough size of one message: chars/4, plus a flat charge per image. Deliberately cheap, and measured once. */
export function estimateTokens(message: Message): number {
  let tokens = estimates.get(message);
  if (tokens === undefined) {
    tokens = measureTokens(message);
    estimates.set(message, tokens);
  }
  return tokens;
}

/** `estimateTokens` without keeping the estimate: for a message made for one use. */
export function measureTokens(message: Message): number {
  let chars = 0;
  let images = 0;
  const addBlocks = (blocks: readonly (TextContent | ImageContent)[]): void => {
    for (const block of blocks) {
      if (block.type === 'text') chars += block.text.length;
      else images += 1;
    }
  };
  switch (message.role) {
    case 'user':
      if (typeof message.content === 'string') chars += message.content.length;
      else addBlocks(message.content);
      break;
    case 'assistant':
      for (const block of message.content) {
        if (block.type === 'text') chars += block.text.length;
        else if (block.type === 'thinking') chars += block.thinking.length;
        else chars += block.name.length + JSON.stringify(block.arguments).length;
      }
      break;
    case 'toolResult':
      addBlocks(message.content);
      break;
    case 'system':
      if (typeof message.content === 'string') chars += message.content.length;
      else addBlocks(message.content);
      for (const section of Object.values(message.sections ?? {})) chars += section?.length ?? 0;
      if (message.toolsAdded) chars += JSON.stringify(message.toolsAdded).length;
      break;
    default:
      skipUnknown(message);
  }
  return Math.ceil(chars / CHARS_PER_TOKEN) + images * IMAGE_TOKENS;
}

/**
 * Current context size: the provider-reported usage of the last successful assistant message, plus
 * estimates for whatever came after it. Without such a message, estimates for everything.
 */
export function estimateContextTokens(messages: readonly Message[]): number {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message.role !== 'assistant') continue;
    if (message.stopReason === 'error' || message.stopReason === 'aborted') continue;
    const anchored = contextTokens(message.usage);
    if (anchored === 0) continue;
    let total = anchored;
    for (let j = i + 1; j < messages.length; j++) total += estimateTokens(messages[j]);
    return total;
  }
  let total = 0;
  for (const message of messages) total += estimateTokens(message);
  return total;
}

/**
 * The threshold trigger. An unknown window (0) disables it. Whether compaction is enabled at all,
 * and whether the turn ended cleanly, is the caller's to check.
 */
export function shouldCompact(input: { contextTokens: number; contextWindow: number; reserveTokens: number }): boolean {
  return input.contextWindow > 0 && input.contextTokens > input.contextWindow - input.reserveTokens;
}

/** Whether an answer that used `usage` crosses the threshold (`shouldCompact`) under `config` for `model`. */
export function answerCrossesThreshold(
  config: CompactionConfig | undefined,
  model: { contextWindow: number; maxTokens: number },
  usage: TokenCounts,
): boolean {
  const { contextWindow, reserveTokens } = resolveCompactionSettings(config, model);
  return shouldCompact({ contextTokens: contextTokens(usage), contextWindow, reserveTokens });
}

// ── Rendering ─────────────────────────────────────────────────────────────────────────────────

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The user message that stands in for everything a compaction summarized. */
export function renderCompactionSummary(summary: string): string {
  return `<compaction type="context_summary">\n${escapeXml(summary)}\n</compaction>`;
}
