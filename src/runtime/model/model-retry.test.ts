import { describe, expect, it } from 'vitest';
import { fauxAssistantMessage } from '@earendil-works/pi-ai';
import type { AssistantMessage } from '@earendil-works/pi-ai';
import { MAX_MODEL_RETRIES, isOverflow, isRetryableModelError, retryDelayMs } from './model-retry.ts';

function errorMessage(text: string | undefined, stopReason: AssistantMessage['stopReason'] = 'error'): AssistantMessage {
  return fauxAssistantMessage('', { stopReason, errorMessage: text });
}

describe('isRetryableModelError', () => {
  it.each([
    'Overloaded',
    '429 Too Many Requests',
    'rate limit exceeded',
    'Rate-limit hit',
    'HTTP 503 Service Unavailable',
    'internal server error',
    'Network error while streaming',
    'connection reset by peer',
    'Connection refused',
    'socket hang up',
    'fetch failed',
    'request timed out',
    'Timeout waiting for response',
    'stream terminated',
    'Provider finish_reason: error',
    'idle stream (retryable_interruption)',
  ])('retries %j', (text) => {
    expect(isRetryableModelError(errorMessage(text))).toBe(true);
  });

  it.each(['invalid api key', 'Unknown model', 'provider finish_reason: error-ish', 'HTTP 400 bad request'])(
    'does not retry %j',
    (text) => {
      expect(isRetryableModelError(errorMessage(text))).toBe(false);
    },
  );

  it('only classifies error stops', () => {
    expect(isRetryableModelError(errorMessage('overloaded', 'aborted'))).toBe(false);
    expect(isRetryableModelError(errorMessage('overloaded', 'stop'))).toBe(false);
    expect(isRetryableModelError(errorMessage(undefined))).toBe(false);
  });

  it('does not retry a context overflow even when its text matches', () => {
    expect(isRetryableModelError(errorMessage('prompt is too long: 215003 tokens > 200000 maximum'))).toBe(false);
    expect(isRetryableModelError(errorMessage('upstream 500 (request_too_large)'))).toBe(false);
  });

  it('allows three retries', () => {
    expect(MAX_MODEL_RETRIES).toBe(3);
  });
});

describe('retryDelayMs', () => {
  it('doubles from 2 s with jitter between 75% and 100%', () => {
    expect(retryDelayMs(1, () => 0)).toBe(1500);
    expect(retryDelayMs(1, () => 1)).toBe(2000);
    expect(retryDelayMs(2, () => 0)).toBe(3000);
    expect(retryDelayMs(3, () => 1)).toBe(8000);
    expect(retryDelayMs(3, () => 0.5)).toBe(7000);
  });

  it('stays within bounds with the default random source', () => {
    for (let i = 0; i < 50; i++) {
      const delay = retryDelayMs(2);
      expect(delay).toBeGreaterThanOrEqual(3000);
      expect(delay).toBeLessThanOrEqual(4000);
    }
  });
});

describe('isOverflow', () => {
  it('recognizes pi-classified overflow errors', () => {
    expect(isOverflow(errorMessage('prompt is too long: 215003 tokens > 200000 maximum'), 200000)).toBe(true);
  });

  it('recognizes our request_too_large marker', () => {
    expect(isOverflow(errorMessage('Workers AI rejected the request (request_too_large)'), 0)).toBe(true);
    expect(isOverflow(errorMessage('Workers AI rejected the request (request_too_large)', 'stop'), 0)).toBe(false);
  });

  it('detects silent overflow from usage only when the window is known', () => {
    const silent = fauxAssistantMessage('ok');
    silent.usage = { ...silent.usage, input: 5000 };
    expect(isOverflow(silent, 4000)).toBe(true);
    expect(isOverflow(silent, 0)).toBe(false);
  });

  it('is false for ordinary errors', () => {
    expect(isOverflow(errorMessage('overloaded'), 100000)).toBe(false);
  });
});
