/**
 * Attachment bytes for what the loop hands out: the fold keeps image and document references
 * into the store; the model context and `useDelivery()` get the bytes (base64), loaded once per
 * attempt.
 */
import type { Message } from '@earendil-works/pi-ai';
import { encodeBase64 } from './attachments.ts';
import { ATTACHMENT_DATA_PREFIX, withOrigin } from './conversation.ts';
import type { ConversationView } from './conversation-view.ts';
import { DOCUMENT_REF_PREFIX, type DocumentPlacement } from '../model/documents.ts';
import type { AttachmentRecordRef } from '../store/records.ts';
import type { Delivery } from '../common/types.ts';
import type { ConversationKey } from '../store/conversation-key.ts';

/** One attempt's cache of attachment bytes, read from the stream that holds them. */
export class AttachmentBytes {
  private readonly cache = new Map<string, string>();
  private readonly view: ConversationView;
  /** The root conversation's stream: a delegate forwards references to the root's attachments. */
  private readonly key: ConversationKey;

  constructor(view: ConversationView, key: ConversationKey) {
    this.view = view;
    this.key = key;
  }

  /** The attachment's bytes as base64; empty when the store no longer has them. */
  base64(id: string): string {
    let data = this.cache.get(id);
    if (data === undefined) {
      const found = this.view.attachment(this.key, id)?.bytes;
      data = found === undefined ? '' : encodeBase64(found);
      this.cache.set(id, data);
    }
    return data;
  }
}

/**
 * The model context with image references loaded, and document references placed for the model's
 * API: a native document block, or a placeholder.
 */
export function hydrateAttachments(
  messages: Message[],
  {
    bytes,
    documents,
    placement,
  }: { bytes: AttachmentBytes; documents: ReadonlyMap<string, AttachmentRecordRef>; placement: DocumentPlacement },
): Message[] {
  const isRef = (part: { type: string; data?: string; text?: string }) =>
    (part.type === 'image' && part.data!.startsWith(ATTACHMENT_DATA_PREFIX)) ||
    (part.type === 'text' && part.text!.startsWith(DOCUMENT_REF_PREFIX));
  return messages.map((message) => {
    if (message.role !== 'user' || typeof message.content === 'string') return message;
    if (!message.content.some(isRef)) return message;
    return {
      ...message,
      content: message.content.map((part) => {
        if (part.type === 'image' && part.data.startsWith(ATTACHMENT_DATA_PREFIX)) {
          return { ...part, data: bytes.base64(part.data.slice(ATTACHMENT_DATA_PREFIX.length)) };
        }
        if (part.type !== 'text' || !part.text.startsWith(DOCUMENT_REF_PREFIX)) return part;
        const id = part.text.slice(DOCUMENT_REF_PREFIX.length);
        const ref = documents.get(id);
        const name = ref?.filename ?? id;
        return placement.place(
          id,
          () => ({
            data: bytes.base64(id),
            mimeType: ref?.mimeType ?? 'application/pdf',
            ...(ref?.filename === undefined ? {} : { filename: ref.filename }),
          }),
          name,
        );
      }),
    };
  });
}

/** `useDelivery()` shows attachments as delivered: base64 data, loaded from the store. */
export function deliveryWithAttachments(delivery: Delivery | undefined, bytes: AttachmentBytes): Delivery | undefined {
  if (delivery?.kind !== 'user' || delivery.attachments === undefined) return delivery;
  // A spread copies only enumerable properties: the origin is carried over explicitly.
  return withOrigin(delivery.origin, {
    ...delivery,
    attachments: delivery.attachments.map((attachment) =>
      attachment.data.startsWith(ATTACHMENT_DATA_PREFIX)
        ? { ...attachment, data: bytes.base64(attachment.data.slice(ATTACHMENT_DATA_PREFIX.length)) }
        : attachment,
    ),
  });
}
