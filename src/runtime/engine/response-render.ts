/**
 * The agent's render for one response: the scope its hooks see (the delivery with its attachment
 * bytes, persistent state through the pending writes, data writers, `useDispatchMessage()`), and
 * the model, thinking level and compaction latched by the first render of the attempt. A delegate
 * renders its subagent instead, with the model latched from the parent turn's.
 */
import { type AttachmentBytes, deliveryWithAttachments } from './attachment-hydration.ts';
import type { LiveConversation } from './conversation-view.ts';
import type { PendingState } from './pending-state.ts';
import { type PendingTimers, checkTimerName, scheduledTimer, timerFromOptions } from './pending-timers.ts';
import type { ResponseWriter } from './response-writer.ts';
import { type RenderResult, type RenderScope, render, renderDelegate } from '../authoring/render.ts';
import type { Agent } from '../authoring/identity.ts';
import type { SubagentDefinition } from '../authoring/subagents.ts';
import { AgentDefinitionError } from '../common/errors.ts';
import { jsonNormalize } from '../common/values.ts';
import type { DeliveredMessageInput, DispatchReceipt } from '../common/types.ts';

/** Model, thinking level and compaction as latched for the submission. */
export type LatchedModel = NonNullable<RenderResult['model']>;

export interface ResponseRenderOptions {
  agent: Agent;
  live: LiveConversation;
  submissionId: string;
  /** The response message a `data_write` belongs to. */
  responseMessageId: () => string;
  state: PendingState;
  timers: PendingTimers;
  bytes: AttachmentBytes;
  writer: ResponseWriter;
  /** `useDispatchMessage()`: a real delivery to the agent's own instance. */
  dispatch(message: DeliveredMessageInput): Promise<DispatchReceipt>;
  /** Set for a delegated task's response: the subagent it renders, and the model latched for it. */
  delegate?: { subagent: SubagentDefinition; model: LatchedModel };
}

export class ResponseRender {
  private readonly options: ResponseRenderOptions;
  private dataWriterNames: readonly string[] | undefined;
  private latched: LatchedModel | undefined;

  constructor(options: ResponseRenderOptions) {
    this.options = options;
    this.latched = options.delegate?.model;
  }

  /** The latched model; undefined until the first render of the attempt. */
  get model(): LatchedModel | undefined {
    return this.latched;
  }

  render(): RenderResult {
    const { agent, live, state, timers, bytes, delegate } = this.options;
    const delivery = deliveryWithAttachments(live.conv.lastDelivery, bytes);
    if (delegate !== undefined) return renderDelegate(delegate.subagent, delivery);
    const scope: RenderScope = {
      instanceId: live.instanceId,
      delivery,
      initialData: live.conv.initialData,
      dataWriterNames: this.dataWriterNames,
      readState: (name) => state.read(name),
      setState: (name, next, defaultValue) => state.set(name, next, defaultValue),
      writeData: (name, data) => this.writeData(name, data),
      timers: {
        read: () => timers.read().map(scheduledTimer),
        schedule: (name, options, framework) => {
          const timer = timerFromOptions(live.key, name, options, Date.now(), framework === true);
          timers.schedule(timer);
          return scheduledTimer(timer);
        },
        cancel: (name, framework) => timers.cancel(checkTimerName(name, 'cancel', framework === true)),
      },
      dispatch: (message) => this.options.dispatch(message),
    };
    const result = render(agent, { kind: 'root', scope, props: { id: live.instanceId } });
    this.dataWriterNames = result.dataWriterNames;
    // Model, thinking level and compaction are latched for the submission (agents-and-hooks.md §5).
    if (this.latched === undefined) {
      if (result.model === undefined) {
        throw new AgentDefinitionError(
          'model_required',
          `[flue] The agent requires a model. Call useModel('provider-id/model-id') in the agent function.`,
          {
            agent: live.agentName,
          },
        );
      }
      this.latched = result.model;
    }
    return result;
  }

  private writeData(name: string, data: unknown): void {
    if (data === undefined) throw new Error(`[flue] useDataWriter("${name}") cannot write undefined.`);
    const normalized = jsonNormalize(data, `useDataWriter("${name}")`);
    this.options.writer.commit([
      { type: 'data_write', submissionId: this.options.submissionId, messageId: this.options.responseMessageId(), name, data: normalized },
    ]);
  }
}
