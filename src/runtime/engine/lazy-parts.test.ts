import { describe, expect, it } from 'vitest';
import { compactionPart } from './lazy-parts.ts';

describe("the response loop's lazy parts", () => {
  it("compaction's part is the summarization module", async () => {
    expect(typeof (await compactionPart()).summarizeConversation).toBe('function');
  });
});
