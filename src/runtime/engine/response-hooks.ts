/**
 * The hook seams of a response (agents-and-hooks.md §6): `useResponseStart` and
 * `useResponseFinish` (synchronous, they contribute message metadata), `useAgentStart` per
 * delivery and `useAgentFinish` at would-stop points (async, they may append messages and get a
 * harness scoped to the callback). What a seam appends commits with the state writes it made.
 */
import { deepMerge } from './conversation.ts';
import { parseAppendMessage } from './delivered-message.ts';
import { abortError } from '../common/errors.ts';
import { newId } from '../common/ids.ts';
import type { ConversationRecord } from '../store/records.ts';
import type { RunContext } from './run-context.ts';
import type { AgentAppendMessage, FlueHarness } from '../common/types.ts';
import { isPlainObject } from '../common/values.ts';

const FINISH_CYCLE_CEILING = 32;

export function runResponseStart(run: RunContext): void {
  const hooks = run.render().responseStart;
  let metadata: Record<string, unknown> = {};
  hooks.forEach((hook, index) => {
    const returned = hook({ metadata: structuredClone(metadata), log: run.logger({ hook: 'useResponseStart', hookIndex: index }) });
    metadata = mergeReturnedMetadata(metadata, returned, 'useResponseStart');
  });
  run.startMetadata = Object.keys(metadata).length > 0 ? metadata : undefined;
}

export function runResponseFinish(run: RunContext): void {
  const hooks = run.render().responseFinish;
  if (hooks.length === 0) return;
  const info = run.conv.response(run.row.id);
  const message = run.conv.messages.find((m) => m.id === run.responseMessageId);
  let metadata: Record<string, unknown> = message?.metadata ?? {};
  let contributed: Record<string, unknown> = {};
  hooks.forEach((hook, index) => {
    const returned = hook({
      metadata: structuredClone(metadata),
      response: { usage: structuredClone(info.usage), toolCalls: structuredClone(info.toolCalls) },
      log: run.logger({ hook: 'useResponseFinish', hookIndex: index }),
    });
    metadata = mergeReturnedMetadata(metadata, returned, 'useResponseFinish');
    contributed = mergeReturnedMetadata(contributed, returned, 'useResponseFinish');
  });
  if (Object.keys(contributed).length > 0) {
    run.commitWithState([{ type: 'response_metadata', submissionId: run.row.id, messageId: run.responseMessageId, metadata: contributed }]);
  }
}

/** `useAgentStart` for one delivery: concurrent callbacks, appends grouped in declaration order. */
export async function runAgentStart(run: RunContext, submissionId: string): Promise<void> {
  const hooks = (await run.renderWithEnvironment()).agentStart;
  // With no callbacks there is nothing a recovery could repeat, so no marker row is needed.
  if (hooks.length === 0 && !run.hasStateWrites) return;
  const appended: AgentAppendMessage[][] = hooks.map(() => []);
  await Promise.all(
    hooks.map(async (hook, index) => {
      const seam = seamContext(run, appended[index]!, { hook: 'useAgentStart', hookIndex: index });
      try {
        await hook(seam.context);
      } finally {
        seam.close();
      }
    }),
  );
  run.commitWithState([...appended.flat().map((message) => appendedRecord(message, submissionId)), { type: 'agent_start_run', submissionId }]);
}

/** `useAgentFinish` at a would-stop point; true when an append continues the response. */
export async function runAgentFinish(run: RunContext): Promise<boolean> {
  const hooks = (await run.renderWithEnvironment()).agentFinish;
  if (hooks.length === 0) return false;
  const info = run.conv.response(run.row.id);
  const appended: AgentAppendMessage[] = [];
  for (const [index, hook] of hooks.entries()) {
    const seam = seamContext(run, appended, { hook: 'useAgentFinish', hookIndex: index });
    try {
      await hook({
        ...seam.context,
        response: { toolCalls: structuredClone(info.toolCalls), usage: structuredClone(info.usage) },
      });
    } finally {
      seam.close();
    }
  }
  if (appended.length === 0) {
    if (run.hasStateWrites) run.commitWithState([{ type: 'agent_finish_cycle', submissionId: run.row.id }]);
    return false;
  }
  if (info.finishCycles >= FINISH_CYCLE_CEILING) {
    throw new Error(`[flue] useAgentFinish() continued this response more than ${FINISH_CYCLE_CEILING} times; the ceiling is ${FINISH_CYCLE_CEILING} continuation cycles per response.`);
  }
  run.commitWithState([...appended.map((message) => appendedRecord(message, run.row.id)), { type: 'agent_finish_cycle', submissionId: run.row.id }]);
  return true;
}

function seamContext(run: RunContext, sink: AgentAppendMessage[], provenance: Record<string, unknown>) {
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
        const signal = run.signal;
        const follow = () => scope!.abort(signal.reason);
        if (signal.aborted) follow();
        else signal.addEventListener('abort', follow, { once: true });
        harness = run.harness(run.depth, scope.signal);
      }
      return harness;
    },
    log: run.logger(provenance),
    signal: run.signal,
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
