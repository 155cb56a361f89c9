/**
 * Attachments of delivered user messages: decoded from base64 at admission, stored once beside
 * the log (chunked, since a Durable Object row holds at most 2 MB), and referenced from records
 * by `AttachmentRecordRef`. The model context and `useDelivery()` load the bytes when needed.
 */
import { sha256HexBytes } from '../common/ids.ts';
import type { AttachmentRecordRef } from '../store/records.ts';
import { FROZEN_KIND_NAMES, type SubmissionKind } from '../store/sql-store.ts';
import type { DeliveredMessage } from '../common/types.ts';

export interface PreparedAttachment {
  ref: AttachmentRecordRef;
  bytes: Uint8Array;
}

export function decodeBase64(data: string): Uint8Array<ArrayBuffer> {
  const binary = atob(data);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

export function encodeBase64(bytes: Uint8Array): string {
  let binary = '';
  // In slices: String.fromCharCode takes its arguments on the stack.
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** Attachment ids are deterministic (`att_<kind>_<submissionId>_<index>`), so replays converge. */
export async function prepareAttachments(
  message: DeliveredMessage,
  kind: SubmissionKind,
  submissionId: string,
): Promise<PreparedAttachment[]> {
  if (message.kind !== 'user' || message.attachments === undefined) return [];
  return Promise.all(
    message.attachments.map(async (attachment, index) => {
      const bytes = decodeBase64(attachment.data);
      return {
        ref: {
          id: `att_${FROZEN_KIND_NAMES[kind]}_${submissionId}_${index}`,
          type: attachment.type,
          mimeType: attachment.mimeType,
          size: bytes.length,
          digest: await sha256HexBytes(bytes),
          ...(attachment.filename === undefined ? {} : { filename: attachment.filename }),
        },
        bytes,
      };
    }),
  );
}

/** The message as stored on the submission row: attachment bytes replaced by their refs. */
export function withoutAttachmentData(message: DeliveredMessage): DeliveredMessage {
  if (message.kind !== 'user' || message.attachments === undefined) return message;
  return { ...message, attachments: message.attachments.map((attachment) => ({ ...attachment, data: '' })) };
}
