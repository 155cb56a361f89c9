import { describe, expect, it } from 'vitest';
import { compactionPart, harnessScratchPart, transferPart } from './lazy-parts.ts';

describe("the engine's lazy parts", () => {
  it("compaction's part is the summarization module", async () => {
    expect(typeof (await compactionPart()).summarizeConversation).toBe('function');
  });

  it("the harness's part holds prompt and compact", async () => {
    const scratch = await harnessScratchPart();
    expect(typeof scratch.runPrompt).toBe('function');
    expect(typeof scratch.compactScratch).toBe('function');
  });

  it("transfer's part holds export and import", async () => {
    const transfer = await transferPart();
    expect(typeof transfer.exportConversation).toBe('function');
    expect(typeof transfer.importConversation).toBe('function');
  });
});
