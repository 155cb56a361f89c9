/**
 * A conversation out of a store and into one: the reads behind `exportConversation()` and the
 * first half of `fork()`, and the write behind the second half. What may be cut where is decided
 * by conversation-export.ts; this module reads through the view and writes through the writer.
 */
import {
  AgentInstanceExistsError,
  AgentInstanceNotFoundError,
  ForkPointError,
  InvalidRequestError,
  PayloadTooLargeError,
} from '../common/errors.ts';
import { utf8Size } from '../common/limits.ts';
import { newId } from '../common/ids.ts';
import { fromBase64, toBase64 } from '../../shared/skill-bytes.ts';
import { type ConversationKey, storedConversationKey } from '../store/conversation-key.ts';
import type { Batch } from '../store/sql-store.ts';
import type { ConversationView, LiveConversation } from './conversation-view.ts';
import type { ConversationWriter, ImportedConversation } from './conversation-writer.ts';
import {
  CONVERSATION_EXPORT_FORMAT,
  CONVERSATION_EXPORT_VERSION,
  type ConversationExport,
  type ExportedConversation,
  type ExportedFile,
  attachmentIds,
  historyExplains,
  nearestCuts,
  rebaseBatches,
  rekeyUnder,
  retainedChildren,
  settledCuts,
  stateAt,
} from './conversation-export.ts';

export interface ExportOptions {
  /** The last offset to include; by default the latest one at which every submission had settled. */
  at?: number;
  /** The most log bytes an export reads (tests lower it); past it, an earlier `at` is required. */
  maxLogBytes?: number;
}

/**
 * An export is built and carried as one value (in the object that exports it, and in the Worker
 * that forks it), so the log it reads is bounded well inside a Worker's 128 MB.
 */
export const MAX_EXPORT_LOG_BYTES = 32 * 1024 * 1024;

/** The conversation cut at `options.at`, with what it needs to live on elsewhere. */
export function exportConversation(view: ConversationView, live: LiveConversation, options: ExportOptions = {}): ConversationExport {
  if (!live.conv.created) throw new AgentInstanceNotFoundError(live.instanceId);
  const maxLogBytes = options.maxLogBytes ?? MAX_EXPORT_LOG_BYTES;
  // Read no further than the bound: a long conversation is never read whole.
  const batches = view.boundedBatches(live.key, -1, undefined, maxLogBytes);
  const head = live.conv.head;
  const read = batches.at(-1)?.seq ?? -1;
  const cuts = settledCuts(batches);
  if (read < Math.min(options.at ?? head, head)) {
    throw new PayloadTooLargeError(
      'the exported log',
      logBytesOf(batches),
      maxLogBytes,
      `A conversation is exported (and forked) as one value, so its log up to the cut may be at most ${maxLogBytes} bytes. Pass an earlier \`at\`: offset ${cuts.at(-1) ?? 0} is the latest settled one within the limit.`,
    );
  }
  const at = options.at ?? cuts.at(-1)!;
  if (at < 0 || at > head) throw new ForkPointError('out_of_range', at, nearestCuts(cuts, Math.min(Math.max(at, 0), head)), head);
  if (!cuts.includes(at)) throw new ForkPointError('unsettled', at, nearestCuts(cuts, at), head);
  const current = view.stateOf(live);
  const history = view.stateHistory(live.key);
  const state = stateAt(current, history, at, head);
  const files = exportedFiles(view, live.key);
  // Files keep no history: an earlier cut of a conversation that has some cannot say what they held.
  if (state === undefined || (at < head && files.length > 0)) {
    throw new ForkPointError('state_unknown', at, cuts.includes(head) ? { after: head } : {}, head);
  }
  const explained = historyExplains(current, history);
  const prefix = batches.filter((batch) => batch.seq <= at);
  const root: ExportedConversation = {
    key: live.key,
    batches: prefix,
    state: Object.fromEntries(state),
    ...(explained ? { history: history.filter((write) => write.seq <= at) } : {}),
    attachments: exportedAttachments(view, live.key, prefix),
    files,
  };
  return {
    format: CONVERSATION_EXPORT_FORMAT,
    version: CONVERSATION_EXPORT_VERSION,
    agent: live.agentName,
    instanceId: live.instanceId,
    at,
    head,
    exportedAt: new Date().toISOString(),
    conversations: [root, ...exportedChildren(view, prefix)],
  };
}

/** What the batches read weigh, as JSON: the size a refused export names. */
function logBytesOf(batches: readonly Batch[]): number {
  return batches.reduce((sum, batch) => sum + utf8Size(JSON.stringify(batch.records)), 0);
}

/** Child conversations are whole: the settled submission that opened each also finished it. */
function exportedChildren(view: ConversationView, batches: readonly Batch[]): ExportedConversation[] {
  const out: ExportedConversation[] = [];
  for (const key of retainedChildren(batches).map(storedConversationKey)) {
    const childBatches = view.batches(key, -1);
    out.push({
      key,
      batches: childBatches,
      state: Object.fromEntries(view.storedState(key)),
      attachments: exportedAttachments(view, key, childBatches),
      files: exportedFiles(view, key),
    });
    out.push(...exportedChildren(view, childBatches));
  }
  return out;
}

function exportedAttachments(view: ConversationView, key: ConversationKey, batches: readonly Batch[]): ExportedConversation['attachments'] {
  return attachmentIds(batches).flatMap((id) => {
    const stored = view.attachment(key, id);
    return stored === undefined ? [] : [{ ref: stored.ref, data: toBase64(stored.bytes) }];
  });
}

function exportedFiles(view: ConversationView, key: ConversationKey): ExportedFile[] {
  const files = view.sandboxFiles(key);
  const entries = files.list() ?? [];
  // The root directory alone is an empty sandbox.
  if (entries.every((entry) => entry.path === '/')) return [];
  return entries.map((entry) =>
    entry.kind === 'dir'
      ? { path: entry.path, kind: 'dir', mtime: entry.mtime }
      : { path: entry.path, kind: 'file', mtime: entry.mtime, data: toBase64(files.read(entry.path)) },
  );
}

/**
 * A new conversation `live` holding what `exported` holds, under new ids; the birth record says
 * where it came from. Refused when the instance already exists.
 */
export function importConversation(
  view: ConversationView,
  writer: ConversationWriter,
  live: LiveConversation,
  exported: ConversationExport,
): { id: string; uid: string } {
  checkExport(exported);
  if (live.conv.created) throw new AgentInstanceExistsError(live.instanceId, live.conv.uid!);
  const [root] = exported.conversations;
  const rekey = rekeyUnder(root!.key, live.key);
  const birth = root!.batches[0]!.records[0]!;
  const uid = newId('inst');
  const from = birth.type === 'conversation_created' ? birth.conversationId : '';
  const parent = { from, to: newId('conv') };
  const conversations: ImportedConversation[] = exported.conversations.map((conversation, index) => ({
    key: storedConversationKey(rekey(conversation.key)),
    batches: rebaseBatches(
      conversation.batches,
      rekey,
      index === 0
        ? { conversationId: parent.to, uid, forkedFrom: { instanceId: exported.instanceId, conversationId: from, at: exported.at } }
        : undefined,
      parent,
    ),
    state: new Map(Object.entries(conversation.state)),
    history: conversation.history ?? [],
    attachments: conversation.attachments.map(({ ref, data }) => ({ ref, bytes: fromBase64(data) })),
    files: conversation.files.map((file) =>
      file.kind === 'dir'
        ? { path: file.path, kind: 'dir' as const, mtime: file.mtime }
        : { path: file.path, kind: 'file' as const, mtime: file.mtime, bytes: fromBase64(file.data ?? '') },
    ),
  }));
  writer.importConversation(live, conversations);
  view.keep(live);
  return { id: live.instanceId, uid };
}

/** An export is outside input: its shape is checked before anything is written. */
function checkExport(exported: ConversationExport): void {
  const bad = (field: string, fix: string) =>
    new InvalidRequestError(`The conversation export's ${field} is not valid.`, `${field}: ${fix}`);
  if (typeof exported !== 'object' || exported === null) throw bad('value', 'pass what exportConversation() returned.');
  if (exported.format !== CONVERSATION_EXPORT_FORMAT) throw bad('format', `expected "${CONVERSATION_EXPORT_FORMAT}".`);
  if (exported.version !== CONVERSATION_EXPORT_VERSION) {
    throw bad('version', `this runtime reads version ${CONVERSATION_EXPORT_VERSION}; export it again with this version.`);
  }
  if (!Array.isArray(exported.conversations) || exported.conversations.length === 0) {
    throw bad('conversations', 'expected the root conversation first.');
  }
  exported.conversations.forEach((conversation, index) => {
    const field = `conversations[${index}]`;
    if (typeof conversation?.key !== 'string' || !Array.isArray(conversation.batches)) throw bad(field, 'expected { key, batches, … }.');
    conversation.batches.forEach((batch, seq) => {
      if (batch?.seq !== seq || !Array.isArray(batch.records) || batch.records.length === 0) {
        throw bad(
          `${field}.batches[${seq}]`,
          `expected { seq: ${seq}, records: [at least one record] } (batches run 0, 1, 2, … with none missing).`,
        );
      }
    });
    if (conversation.batches[0]?.records[0]?.type !== 'conversation_created') {
      throw bad(`${field}.batches[0]`, 'a conversation starts with its conversation_created record.');
    }
    if (typeof conversation.state !== 'object' || conversation.state === null) throw bad(`${field}.state`, 'expected an object.');
    if (!Array.isArray(conversation.attachments) || !Array.isArray(conversation.files)) {
      throw bad(field, 'expected attachments and files arrays.');
    }
  });
}
