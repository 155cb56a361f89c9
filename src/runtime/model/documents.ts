/**
 * PDF documents in model context. pi-ai has no document content type, so a document travels
 * through pi-ai's message conversion as a text block holding a marker, and the provider payload
 * hook (`onPayload`) swaps that block for the API's native document block just before the request
 * is sent. Model APIs without native documents get a placeholder text instead, and one warning
 * per API per process says so.
 */
import type { Api, Model } from '@earendil-works/pi-ai';

/**
 * The whole text of a conversation-context block standing for a delivered document (its id
 * follows); the response loop places it for the model's API before each call.
 */
export const DOCUMENT_REF_PREFIX = 'flue-document:';

export interface ContextDocument {
  /** Base64 bytes. */
  data: string;
  mimeType: string;
  filename?: string;
}

type NativeBlock = (document: ContextDocument, replaced: Record<string, unknown>) => Record<string, unknown>;

const anthropicDocument: NativeBlock = (document, replaced) => ({
  type: 'document',
  source: { type: 'base64', media_type: document.mimeType, data: document.data },
  ...(document.filename === undefined ? {} : { title: document.filename }),
  // pi-ai marks the last block of the last user message for prompt caching; the mark stays.
  ...(replaced.cache_control === undefined ? {} : { cache_control: replaced.cache_control }),
});

const responsesFile: NativeBlock = (document) => ({
  type: 'input_file',
  filename: document.filename ?? 'document.pdf',
  file_data: `data:${document.mimeType};base64,${document.data}`,
});

const googleInline: NativeBlock = (document) => ({ inlineData: { mimeType: document.mimeType, data: document.data } });

/** Model APIs that accept a PDF as native content, with the block each one expects. */
const NATIVE_DOCUMENT_BLOCKS: Partial<Record<string, NativeBlock>> = {
  'anthropic-messages': anthropicDocument,
  'openai-responses': responsesFile,
  'azure-openai-responses': responsesFile,
  'google-generative-ai': googleInline,
  'google-vertex': googleInline,
};

export function acceptsDocuments(api: Api): boolean {
  return NATIVE_DOCUMENT_BLOCKS[api] !== undefined;
}

/** The text a document is replaced with for a model API that cannot take it. */
export function omittedDocumentText(name: string | undefined): string {
  return `[document ${name === undefined ? '' : `${name} `}omitted: this model API does not accept documents]`;
}

const warnedApis = new Set<string>();

function warnOmitted(api: Api): void {
  if (warnedApis.has(api)) return;
  warnedApis.add(api);
  console.warn(
    `[flue] Model API "${api}" does not accept documents: PDF attachments are replaced in model context with a placeholder saying they were omitted. Anthropic Messages, OpenAI/Azure Responses and Google models receive them.`,
  );
}

/**
 * Collects the documents of one model request. `place` returns the text block that stands for a
 * document in pi-ai's context; `onPayload` (undefined when nothing was placed natively) is passed
 * to the model call.
 */
export class DocumentPlacement {
  private readonly pending = new Map<string, ContextDocument>();
  private readonly model: Model<Api>;

  constructor(model: Model<Api>) {
    this.model = model;
  }

  place(key: string, document: () => ContextDocument, name: string | undefined): { type: 'text'; text: string } {
    if (!acceptsDocuments(this.model.api)) {
      warnOmitted(this.model.api);
      return { type: 'text', text: omittedDocumentText(name) };
    }
    const marker = `[flue-document ${key}]`;
    this.pending.set(marker, document());
    return { type: 'text', text: marker };
  }

  get onPayload(): ((payload: unknown) => unknown) | undefined {
    const build = NATIVE_DOCUMENT_BLOCKS[this.model.api];
    if (build === undefined || this.pending.size === 0) return undefined;
    const pending = this.pending;
    return (payload) => {
      replaceMarkers(payload, pending, build);
      return payload;
    };
  }
}

/** Swaps, in place, every marker text block of the payload for the native document block. */
function replaceMarkers(node: unknown, pending: ReadonlyMap<string, ContextDocument>, build: NativeBlock): void {
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      const item: unknown = node[i];
      const marker = isRecord(item) && typeof item.text === 'string' ? pending.get(item.text) : undefined;
      if (marker !== undefined) node[i] = build(marker, item as Record<string, unknown>);
      else replaceMarkers(item, pending, build);
    }
    return;
  }
  if (isRecord(node)) for (const value of Object.values(node)) replaceMarkers(value, pending, build);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
