import { describe, expect, it } from 'vitest';
import { deltasHoldTextOf } from './turn-stream.ts';
import { assistant, delta } from './log-records.fixtures.ts';

const message = assistant([
  { type: 'thinking', thinking: 'Think.' },
  { type: 'text', text: 'Said once.' },
  { type: 'toolCall', id: 'call_1', name: 'lookup', arguments: {} },
]);

describe('deltasHoldTextOf', () => {
  it("holds when the deltas are exactly the completed message's text, block by block, in pieces or not", () => {
    expect(deltasHoldTextOf([delta(0, 'reasoning', 'Think.'), delta(1, 'text', 'Said once.')], message)).toBe(true);
    expect(
      deltasHoldTextOf(
        [delta(0, 'reasoning', 'Th'), delta(1, 'text', 'Said'), delta(0, 'reasoning', 'ink.'), delta(1, 'text', ' once.')],
        message,
      ),
    ).toBe(true);
    expect(deltasHoldTextOf([], assistant([{ type: 'toolCall', id: 'call_1', name: 'lookup', arguments: {} }]))).toBe(true);
  });

  it('does not hold when the message would not give back what streamed: the deltas are kept', () => {
    // The final message says less, or else, than the stream did (a provider's error message, say).
    expect(deltasHoldTextOf([delta(0, 'reasoning', 'Think.'), delta(1, 'text', 'Said once, then more.')], message)).toBe(false);
    expect(deltasHoldTextOf([delta(1, 'text', 'Said once.')], message)).toBe(false);
    expect(deltasHoldTextOf([delta(0, 'text', 'Think.'), delta(1, 'text', 'Said once.')], message)).toBe(false);
    expect(deltasHoldTextOf([delta(0, 'reasoning', 'Think.'), delta(1, 'text', 'Said once.'), delta(2, 'text', 'x')], message)).toBe(false);
    // A delta of the tool call's block, even an empty one, is not text the message gives back.
    expect(deltasHoldTextOf([delta(0, 'reasoning', 'Think.'), delta(1, 'text', 'Said once.'), delta(2, 'text', '')], message)).toBe(false);
  });
});
