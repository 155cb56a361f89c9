/**
 * Test support: what a model request carries of a text too large for the model's window — its
 * head and tail, with the marker between them saying how much was cut — checked against the
 * original the log keeps.
 */
import { expect } from 'vitest';

export function expectReduced(sent: string, original: string, kind: 'tool result' | 'message', contextWindow: number): void {
  const at = sent.indexOf('\n\n[… ');
  expect(at, 'the reduced text carries a marker').toBeGreaterThan(0);
  expect(sent).toContain(`cut from the middle of this ${kind} so the request fits the model's context window`);
  expect(original.startsWith(sent.slice(0, at))).toBe(true);
  expect(original.endsWith(sent.slice(sent.indexOf(']\n\n', at) + 3))).toBe(true);
  // At most half the window (four characters a token), so the rest of the request fits beside it.
  expect(sent.length).toBeLessThanOrEqual(contextWindow * 2);
}
