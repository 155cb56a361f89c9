/**
 * One model step of the conversation loop as it streams: deltas are committed in coalesced
 * batches (flush-policy.ts) and the step ends in one record. A stream a crash cut off is
 * converged here too, when the next attempt finds it open.
 */
import type { Api, AssistantMessage, AssistantMessageEvent, Model } from '@earendil-works/pi-ai';
import { crashProbe } from '../store/crash-probe.ts';
import { omitImageData } from '../common/events.ts';
import { modelResponse, requestInfo } from './session-events.ts';
import { intercept } from '../common/instrumentation.ts';
import { newId } from '../common/ids.ts';
import { getModels, reasoningOption } from '../model/model-registry.ts';
import type { ConversationRecord } from '../store/records.ts';
import { convergeOpenStep } from './rest-records.ts';
import type { AttemptAbort } from './attempt-abort.ts';
import { type ResponseTail, type StreamedText, streamedText } from './conversation.ts';
import type { ResponseSite } from './response-site.ts';
import type { ResponseWriter } from './response-writer.ts';
import { RunInterrupted } from './run-signals.ts';
import type { ThinkingLevel } from '../common/types.ts';
import { FlushSchedule } from './flush-policy.ts';

export type StepContext = Parameters<ReturnType<typeof getModels>['streamSimple']>[1];

/** What one streamed step reads. */
export interface StepInput {
  model: Model<Api>;
  context: StepContext;
  onPayload?: (payload: unknown) => unknown;
  thinkingLevel: ThinkingLevel | undefined;
  /** The response message the step belongs to, and the submission and attempt it runs in. */
  messageId: string;
  submissionId: string;
  attemptId: string;
  /** `useResponseStart` metadata; the loop passes it to the response's first step only. */
  metadata: Record<string, unknown> | undefined;
  /** The provider's session id: the conversation's id. */
  sessionId: string;
  /** How long the stream may stay silent before the attempt is abandoned. */
  idleMs: number;
  attempt: AttemptAbort;
  site: ResponseSite;
  /**
   * Asked once the step's message is complete: how to commit the step's last batch when that batch
   * ends the response (it then carries the settlement); undefined commits it as any other.
   */
  closing?: (final: AssistantMessage) => ((records: ConversationRecord[]) => void) | undefined;
}

/** A completed step: its id, and the message it ended in. */
export interface CompletedStep {
  stepId: string;
  message: AssistantMessage;
}

/** Streams one step inside the installed interceptors. */
export async function streamStep(input: StepInput, writer: ResponseWriter): Promise<CompletedStep> {
  const stepId = newId('msg');
  const { model, site } = input;
  const started = Date.now();
  site.emit('turn_start', () => ({ turnId: stepId, purpose: 'agent' }), stepId);
  site.emit(
    'turn_request',
    () => ({
      turnId: stepId,
      purpose: 'agent',
      request: { ...requestInfo(model), input: omitImageData(input.context) },
    }),
    stepId,
  );
  // Interceptors see the step's message as the model call's result.
  const message = await intercept(
    () => [
      { type: 'model', turnId: stepId, purpose: 'agent', provider: model.provider, model: model.id },
      { ...site.executionContext(), turnId: stepId },
    ],
    () => streamInto(input, stepId, writer),
  );
  site.emit(
    'turn',
    () => ({
      turnId: stepId,
      purpose: 'agent',
      durationMs: Date.now() - started,
      request: requestInfo(model),
      response: modelResponse(message),
      isError: message.stopReason === 'error' || message.stopReason === 'aborted',
    }),
    stepId,
  );
  site.emit('message_end', () => ({ message: omitImageData(message), turnId: stepId }), stepId);
  return { stepId, message };
}

/**
 * The live events one provider stream event becomes (message_start on the first, then the
 * deltas), for a site someone observes. Deltas carry their turn as correlation only.
 */
function emitStreamEvent(site: ResponseSite, stepId: string, event: AssistantMessageEvent, first: boolean): void {
  if (first) {
    const partial = 'partial' in event ? event.partial : { role: 'assistant', content: [] };
    site.emit('message_start', () => ({ message: omitImageData(partial), turnId: stepId }), stepId);
  }
  switch (event.type) {
    case 'text_delta':
      site.emit('text_delta', () => ({ text: event.delta }), stepId);
      return;
    case 'thinking_start':
      site.emit('thinking_start', () => ({ contentIndex: event.contentIndex }), stepId);
      return;
    case 'thinking_delta':
      site.emit('thinking_delta', () => ({ contentIndex: event.contentIndex, delta: event.delta }), stepId);
      return;
    case 'thinking_end':
      site.emit('thinking_end', () => ({ contentIndex: event.contentIndex, content: event.content }), stepId);
      return;
    case 'toolcall_delta': {
      // Only once the streaming block knows which call it is.
      const block = event.partial.content[event.contentIndex];
      if (block?.type !== 'toolCall' || !block.id || !block.name) return;
      const { id, name } = block;
      site.emit('toolcall_delta', () => ({ toolCallId: id, toolName: name, argumentTextDelta: event.delta }), stepId);
      return;
    }
    // Block bounds and the stream's end have no event of their own: `turn`/`message_end` follow.
    case 'start':
    case 'text_start':
    case 'text_end':
    case 'toolcall_start':
    case 'toolcall_end':
    case 'done':
    case 'error':
      return;
    default:
      event satisfies never;
  }
}

async function streamInto(input: StepInput, stepId: string, writer: ResponseWriter): Promise<AssistantMessage> {
  const { model, attempt, messageId } = input;
  const startedRecord: ConversationRecord = {
    type: 'assistant_started',
    messageId,
    stepId,
    submissionId: input.submissionId,
    attemptId: input.attemptId,
    ...(input.metadata === undefined ? {} : { metadata: input.metadata }),
    ts: new Date().toISOString(),
  };
  let started = false;
  let pending: ConversationRecord[] = [];
  const flush = (extra: ConversationRecord[] = [], commit = (records: ConversationRecord[]) => writer.commit(records)) => {
    schedule.flushed();
    if (pending.length === 0 && extra.length === 0) return;
    const records = [...(started ? [] : [startedRecord]), ...pending, ...extra];
    started = true;
    pending = [];
    commit(records);
  };
  // Once the run is aborted the loop's exit flushes; the schedule's timer must not write for a stopped runtime.
  const schedule = new FlushSchedule(
    () => flush(),
    writer.following,
    () => attempt.signal.aborted,
  );
  // A provider that accepts and never answers, or stalls mid-stream, would hold the attempt
  // forever: past the idle window the attempt is abandoned (the engine runs a new one). The
  // attempt's one watch timer checks the window (`watchStream` below); each event only records its time.
  const stream = getModels().streamSimple(model, input.context, {
    signal: attempt.signal,
    sessionId: input.sessionId,
    ...reasoningOption(model, input.thinkingLevel),
    ...(input.onPayload === undefined ? {} : { onPayload: input.onPayload }),
  });
  let firstDelta = true;
  let firstEvent = true;
  const watched = attempt.watchStream(input.idleMs);
  try {
    for await (const event of stream) {
      watched.heard();
      if (input.site.observed) emitStreamEvent(input.site, stepId, event, firstEvent);
      firstEvent = false;
      if (event.type !== 'text_delta' && event.type !== 'thinking_delta') continue;
      const kind = event.type === 'text_delta' ? 'text' : 'reasoning';
      const last = pending[pending.length - 1];
      if (last?.type === 'assistant_delta' && last.kind === kind && last.block === event.contentIndex) last.delta += event.delta;
      else pending.push({ type: 'assistant_delta', stepId, messageId, kind, block: event.contentIndex, delta: event.delta });
      schedule.held();
      if (firstDelta) {
        firstDelta = false;
        crashProbe()?.({ point: 'model', ...input.site.probeSite() });
      }
    }
  } finally {
    watched.end();
    schedule.end();
  }
  const final = await stream.result();
  if (final.stopReason === 'aborted' && attempt.reason instanceof RunInterrupted) {
    // A shutdown or a stall cut the stream: leave the step open, so the next start or attempt
    // converges and continues it.
    flush();
    throw attempt.reason;
  }
  // A step none of which is written yet is written whole in this batch: its text is kept once, in
  // the completed message, where the fold and the stream's projection take it (stepText),
  // unless the store's format is one that earlier versions, which need the deltas, read too.
  if (!started && writer.writesStepTextOnce && deltasHoldTextOf(pending, final)) pending = [];
  flush(
    [{ type: 'assistant_completed', stepId, messageId, submissionId: input.submissionId, message: final, ts: new Date().toISOString() }],
    input.closing?.(final),
  );
  return final;
}

/**
 * Whether a step's unwritten deltas hold exactly the text of the completed message's text and
 * thinking blocks, each block's whole text and nothing else, so the message may stand for them.
 */
export function deltasHoldTextOf(deltas: readonly ConversationRecord[], message: AssistantMessage): boolean {
  const held = new Map<number, StreamedText>();
  for (const delta of deltas) {
    if (delta.type !== 'assistant_delta') return false;
    const block = held.get(delta.block);
    if (block !== undefined && block.kind !== delta.kind) return false;
    held.set(delta.block, { kind: delta.kind, text: (block?.text ?? '') + delta.delta });
  }
  let blocks = 0;
  for (const [index, block] of message.content.entries()) {
    const text = streamedText(block);
    if (text === undefined) continue;
    const delta = held.get(index);
    if (delta?.kind !== text.kind || delta.text !== text.text) return false;
    blocks++;
  }
  return blocks === held.size;
}

/** A stream that a crash cut off: the batch that closes it and tells the model it was interrupted. */
export function convergeInterruptedStream(open: NonNullable<ResponseTail['openStep']>, submissionId: string): ConversationRecord[] {
  const ts = new Date().toISOString();
  const said = open.blocks.some((block) => block !== undefined && block.text.length > 0);
  const records: ConversationRecord[] = [convergeOpenStep(open, ts)];
  if (said) {
    for (const signalType of ['stream_interrupted', 'stream_continued'] as const) {
      records.push({
        type: 'signal',
        messageId: `msg_${signalType}_${open.stepId}`,
        submissionId,
        origin: 'framework',
        signalType,
        body:
          signalType === 'stream_interrupted'
            ? 'Your previous response was interrupted before it completed.'
            : 'Continue from where the interrupted response stopped.',
        ts,
      });
    }
  }
  return records;
}
