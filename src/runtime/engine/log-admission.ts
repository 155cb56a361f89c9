/**
 * A submission admitted in the log: on a Durable Object, a
 * delivery to an idle conversation is stored as its input record alone, carrying what its ledger
 * row would hold besides the message (`LogAdmission`). This module reads that row back from the
 * record — for the open queue after a wake, and for the row the writer makes when something needs
 * one (another admission, a claim, a continuation, an abort).
 *
 * It imports no engine code: everything above it may import it.
 */
import type { ConversationKey } from '../store/conversation-key.ts';
import { type AdmissionRecord, type ConversationRecord, isAdmissionRecord } from '../store/records.ts';
import type { SubmissionPayload, SubmissionRow } from '../store/sql-store.ts';

/**
 * The open submission a batch read from the log's tail (`SqlStore.newestAdmissionOrSettlement`)
 * leaves: its admission when the batch admits one and settles nothing.
 */
export function openAdmission(records: readonly ConversationRecord[] | undefined): AdmissionRecord | undefined {
  if (records === undefined || records.some((record) => record.type === 'submission_settled')) return undefined;
  return records.find(isAdmissionRecord);
}

/** A record as a copy of the log holds it (a fork, an import): an admission's copy is a plain input record. */
export function withoutAdmission(record: ConversationRecord): ConversationRecord {
  if ((record.type !== 'user_message' && record.type !== 'signal') || record.admission === undefined) return record;
  const { admission: _copied, ...input } = record;
  return input;
}

/**
 * The row of a submission admitted in the log, as it stood at admission: running, its first attempt
 * claimed. Its payload is the delivered message (an admission in the log carries no attachments
 * and no idempotency key); the transport and `fromAgent` are read from the record's origin, which
 * they decided.
 */
export function admittedRow(record: AdmissionRecord, conversation: ConversationKey): SubmissionRow {
  const { admission } = record;
  const payload: SubmissionPayload = {
    message:
      record.type === 'user_message'
        ? { kind: 'user', body: record.body }
        : {
            kind: 'signal',
            type: record.signalType,
            body: record.body,
            ...(record.attributes === undefined ? {} : { attributes: record.attributes }),
            ...(record.tagName === undefined ? {} : { tagName: record.tagName }),
          },
  };
  if (record.deliveryOrigin === 'agent') payload.fromAgent = true;
  return {
    ord: 0,
    id: record.submissionId,
    conversation,
    kind: record.deliveryOrigin === 'http' ? 'http' : 'dispatch',
    payload,
    acceptedAt: admission.acceptedAt,
    status: 'running',
    attemptId: admission.attemptId,
    attemptCount: 1,
    maxAttempts: admission.maxAttempts,
    timeoutMs: admission.timeoutMs,
    startedAt: admission.startedAt,
    abortRequestedAt: null,
    joinedInto: null,
    outcome: null,
    error: null,
    inLog: true,
  };
}
