/**
 * The hook seams of a response: `useResponseStart` and `useResponseFinish` (synchronous, they
 * contribute message metadata), `useAgentStart` per delivery and `useAgentFinish` at would-stop
 * points (async, they may append messages and get a harness scoped to the callback). Each seam
 * returns the records it decided; the loop commits them with the state writes the callbacks made.
 */
import { type ResponseInfo, deepMerge } from './conversation.ts';
import { parseAppendMessage } from './delivered-message.ts';
import type { ResponseSite } from './response-site.ts';
import type { RenderResult } from '../authoring/render.ts';
import { abortError } from '../common/errors.ts';
import { newId } from '../common/ids.ts';
import type { ConversationRecord } from '../store/records.ts';
import type { AgentAppendMessage, FlueHarness } from '../common/types.ts';
import { isPlainObject } from '../common/values.ts';

const FINISH_CYCLE_CEILING = 32;

/** What an async seam's callbacks get of the response: its signal, its logs and a harness. */
export interface HookSeam {
  signal: AbortSignal;
  site: ResponseSite;
  /** A harness over the response, closed by `scope` (the callback's). */
  harness(scope: AbortSignal): FlueHarness;
}

/** `useResponseStart`: the metadata the response's first step carries, if the callbacks returned any. */
export function runResponseStart(hooks: RenderResult['responseStart'], site: ResponseSite): Record<string, unknown> | undefined {
  let metadata: Record<string, unknown> = {};
  hooks.forEach((hook, index) => {
    const returned = hook({ metadata: structuredClone(metadata), log: site.logger({ hook: 'useResponseStart', hookIndex: index }) });
    metadata = mergeReturnedMetadata(metadata, returned, 'useResponseStart');
  });
  return Object.keys(metadata).length > 0 ? metadata : undefined;
}

/** `useResponseFinish`: the `response_metadata` record of what the callbacks contributed, if anything. */
export function runResponseFinish({
  hooks,
  submissionId,
  response,
  messageId,
  metadata: committed,
  site,
}: {
  hooks: RenderResult['responseFinish'];
  submissionId: string;
  response: ResponseInfo;
  /** The response message, and the metadata it carries so far. */
  messageId: string;
  metadata: Record<string, unknown> | undefined;
  site: ResponseSite;
}): ConversationRecord | undefined {
  if (hooks.length === 0) return undefined;
  let metadata: Record<string, unknown> = committed ?? {};
  let contributed: Record<string, unknown> = {};
  hooks.forEach((hook, index) => {
    const returned = hook({
      metadata: structuredClone(metadata),
      response: { usage: structuredClone(response.usage), toolCalls: structuredClone(response.toolCalls) },
      log: site.logger({ hook: 'useResponseFinish', hookIndex: index }),
    });
    metadata = mergeReturnedMetadata(metadata, returned, 'useResponseFinish');
    contributed = mergeReturnedMetadata(contributed, returned, 'useResponseFinish');
  });
  if (Object.keys(contributed).length === 0) return undefined;
  return { type: 'response_metadata', submissionId, messageId, metadata: contributed };
}

/**
 * `useAgentStart` for one delivery: concurrent callbacks, appends grouped in declaration order.
 * The batch to commit with the pending state writes; empty when there is nothing to record.
 */
export async function runAgentStart({
  hooks,
  submissionId,
  hasPendingState,
  seam,
}: {
  hooks: RenderResult['agentStart'];
  /** The delivery the callbacks run for. */
  submissionId: string;
  hasPendingState(): boolean;
  seam: HookSeam;
}): Promise<ConversationRecord[]> {
  // With no callbacks there is nothing a recovery could repeat, so no marker row is needed.
  if (hooks.length === 0 && !hasPendingState()) return [];
  const appended: AgentAppendMessage[][] = hooks.map(() => []);
  await Promise.all(
    hooks.map(async (hook, index) => {
      const callback = seamContext(seam, appended[index]!, { hook: 'useAgentStart', hookIndex: index });
      try {
        await hook(callback.context);
      } finally {
        callback.close();
      }
    }),
  );
  return [...appended.flat().map((message) => appendedRecord(message, submissionId)), { type: 'agent_start_run', submissionId }];
}

/**
 * `useAgentFinish` at a would-stop point: whether an append continues the response, and the batch
 * to commit with the pending state writes (empty when there is nothing to record).
 */
export async function runAgentFinish({
  hooks,
  submissionId,
  response,
  hasPendingState,
  seam,
}: {
  hooks: RenderResult['agentFinish'];
  submissionId: string;
  response: ResponseInfo;
  hasPendingState(): boolean;
  seam: HookSeam;
}): Promise<{ continues: boolean; records: ConversationRecord[] }> {
  if (hooks.length === 0) return { continues: false, records: [] };
  const appended: AgentAppendMessage[] = [];
  for (const [index, hook] of hooks.entries()) {
    const callback = seamContext(seam, appended, { hook: 'useAgentFinish', hookIndex: index });
    try {
      await hook({
        ...callback.context,
        response: { toolCalls: structuredClone(response.toolCalls), usage: structuredClone(response.usage) },
      });
    } finally {
      callback.close();
    }
  }
  const cycle: ConversationRecord = { type: 'agent_finish_cycle', submissionId: submissionId };
  if (appended.length === 0) return { continues: false, records: hasPendingState() ? [cycle] : [] };
  if (response.finishCycles >= FINISH_CYCLE_CEILING) {
    throw new Error(
      `[flue] useAgentFinish() continued this response more than ${FINISH_CYCLE_CEILING} times; the ceiling is ${FINISH_CYCLE_CEILING} continuation cycles per response.`,
    );
  }
  return { continues: true, records: [...appended.map((message) => appendedRecord(message, submissionId)), cycle] };
}

function seamContext(seam: HookSeam, sink: AgentAppendMessage[], provenance: Record<string, unknown>) {
  let open = true;
  let harness: FlueHarness | undefined;
  // Like a tool's, a hook's harness is scoped to its callback: it closes when the callback ends.
  let scope: AbortController | undefined;
  const context = {
    append(message: AgentAppendMessage) {
      if (!open) throw new Error('[flue] append() was called after its hook callback finished; it is valid only during the callback.');
      sink.push(parseAppendMessage(message));
    },
    get harness() {
      if (harness === undefined) {
        scope = new AbortController();
        const signal = seam.signal;
        const follow = () => scope!.abort(signal.reason);
        if (signal.aborted) follow();
        else signal.addEventListener('abort', follow, { once: true });
        harness = seam.harness(scope.signal);
      }
      return harness;
    },
    log: seam.site.logger(provenance),
    signal: seam.signal,
  };
  return {
    context,
    close() {
      open = false;
      scope?.abort(abortError('The hook callback finished; its harness is closed.'));
    },
  };
}

function appendedRecord(message: AgentAppendMessage, submissionId: string): ConversationRecord {
  return {
    type: 'signal',
    messageId: newId('msg'),
    submissionId,
    origin: 'append',
    signalType: message.type,
    body: message.body,
    ...(message.attributes === undefined ? {} : { attributes: message.attributes }),
    ...(message.tagName === undefined ? {} : { tagName: message.tagName }),
    ts: new Date().toISOString(),
  };
}

function mergeReturnedMetadata(metadata: Record<string, unknown>, returned: unknown, hook: string): Record<string, unknown> {
  if (returned === undefined) return metadata;
  if (returned !== null && typeof returned === 'object' && typeof (returned as { then?: unknown }).then === 'function') {
    throw new Error(`[flue] ${hook}() callbacks are synchronous; it returned a promise.`);
  }
  if (!isPlainObject(returned)) throw new Error(`[flue] ${hook}() must return a plain object of metadata or nothing.`);
  return deepMerge(metadata, returned);
}
