/**
 * Transient model error policy (models-and-providers.md §6.1) and overflow classification (§6.3).
 * pi never throws for provider failures; they arrive as a final assistant message with
 * `stopReason: 'error'`, so both checks classify that message.
 */
import { isContextOverflow } from '@earendil-works/pi-ai';
import type { AssistantMessage } from '@earendil-works/pi-ai';

const TRANSIENT_ERROR =
  /overloaded|rate.?limit|too many requests|429|500|502|503|504|service.?unavailable|server.?error|network.?error|connection.?(?:reset|refused|lost)|socket hang up|fetch failed|timed? out|timeout|terminated|provider finish_reason:\s*error(?![-\w])/i;

/** Marker our own providers put in `errorMessage` for an interruption worth retrying (e.g. idle stream). */
export const RETRYABLE_INTERRUPTION_MARKER = '(retryable_interruption)';
/** Marker for an HTTP 413 from a provider pi cannot classify itself (Workers AI binding). */
export const REQUEST_TOO_LARGE_MARKER = '(request_too_large)';

/** Retries after the first failure, counted over consecutive errors in durable history. */
export const MAX_MODEL_RETRIES = 3;

/**
 * Overflow errors are excluded even when they match (token counts like "1500" contain "500"):
 * retrying an oversized request unchanged cannot succeed; overflow compaction handles them.
 */
export function isRetryableModelError(message: AssistantMessage): boolean {
  if (message.stopReason !== 'error') return false;
  if (isOverflow(message, 0)) return false;
  const text = message.errorMessage ?? '';
  return TRANSIENT_ERROR.test(text) || text.includes(RETRYABLE_INTERRUPTION_MARKER);
}

/** Delay before retry `n` (1-based): 2 s doubling, jittered down by up to 25% to spread herds. */
export function retryDelayMs(n: number, random: () => number = Math.random): number {
  return 2000 * 2 ** (n - 1) * (0.75 + 0.25 * random());
}

/**
 * Overflow ⇒ compact and retry once, instead of the transient retry. `contextWindow` 0 means
 * "unknown", which pi treats as "skip the silent-overflow usage check".
 */
export function isOverflow(message: AssistantMessage, contextWindow: number): boolean {
  if (isContextOverflow(message, contextWindow)) return true;
  return message.stopReason === 'error' && (message.errorMessage ?? '').includes(REQUEST_TOO_LARGE_MARKER);
}
