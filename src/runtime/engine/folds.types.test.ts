/**
 * The folds over the log and the stream are exhaustive by the type checker (checked by
 * `tsc --noEmit`; the vitest run checks what a fold does with a value the types did not foresee).
 * Each `@ts-expect-error` marks something that must NOT compile.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { skipUnknown, unreachable } from '../../shared/exhaustive.ts';
import type { ConversationRecord } from '../store/records.ts';
import type { PrintedChunk } from '../../build/cli-run.ts';
import { Conversation } from './conversation.ts';
import { projectBatch, type ConversationStreamChunk } from './projection.ts';

const ts = '2026-01-01T00:00:00.000Z';

/** What reaches a fold's `default` when it has a case for every member of `Known`. */
type LeftOver<All extends { type: string }, Known extends { type: string }> = Exclude<All, { type: Known['type'] }>;

describe('exhaustive folds', () => {
  it('compile only while every record type has its case', () => {
    // Today's record union: nothing is left over once every type has its case.
    const complete = (record: LeftOver<ConversationRecord, ConversationRecord>) => skipUnknown(record);
    // A record type added to the union reaches the default of every fold written for today's union.
    type Future = ConversationRecord | { type: 'future_record'; ts: string };
    // @ts-expect-error -- the new type is not `never`: each fold must learn it before this compiles
    const incomplete = (record: LeftOver<Future, ConversationRecord>) => skipUnknown(record);
    // @ts-expect-error -- the same for the throwing default
    const throwing = (record: LeftOver<Future, ConversationRecord>) => unreachable(record, 'record');
    expect([complete, incomplete, throwing]).toHaveLength(3);
  });

  it("keep the CLI printer's chunk list equal to the stream's chunk types", () => {
    expectTypeOf<PrintedChunk['type']>().toEqualTypeOf<ConversationStreamChunk['type']>();
  });

  it('leave out a stored record of a type this version does not know, as before', () => {
    const created: ConversationRecord = { type: 'conversation_created', conversationId: 'conv_1', uid: 'inst_1', ts };
    const future = { type: 'future_record', ts } as unknown as ConversationRecord;
    const input: ConversationRecord = { type: 'user_message', messageId: 'msg_1', submissionId: 'sub_1', body: 'hi', ts };
    const conversation = new Conversation();
    conversation.apply({ seq: 0, records: [created] });
    conversation.apply({ seq: 1, records: [future, input] });
    expect(conversation.snapshot().messages.map((m) => m.id)).toEqual(['msg_1']);
    const chunks = projectBatch({ seq: 1, records: [future, input] }, 'conv_1', () => {
      throw new Error('not a reset');
    });
    expect(chunks.map((c) => c.type)).toEqual(['message-appended']);
  });

  it('throw on a value only this code produces, naming it', () => {
    expect(() => unreachable('elsewhere' as never, 'host kind')).toThrow('[flue] Unexpected host kind: "elsewhere"');
  });
});
