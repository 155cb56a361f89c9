/**
 * What a replay compares, read from a conversation's log: its deliveries in order, each with the
 * turns of its response (the model's answer, the tool calls it made and what they returned, the
 * instructions and tools the model was shown), its reply text and its outcome; and where a
 * replayed run diverged from the recording. Functions of the records alone.
 */
import { skipUnknown } from '../shared/exhaustive.ts';
import { deepEqualJson } from '../runtime/common/ids.ts';
import { RESERVED_TOOL_NAMES } from '../runtime/authoring/define-tool.ts';
import type { ResourceSnapshot } from '../runtime/authoring/narration.ts';
import type { AssistantMessage } from '../runtime/model/model-types.ts';
import type { ConversationRecord, RecordOf, SubmissionOutcome, ToolOutcome } from '../runtime/store/records.ts';

export interface LoggedToolCall {
  id: string;
  name: string;
  arguments: unknown;
}

/** One model call of a response and the tool batch it asked for. */
export interface LoggedTurn {
  message: AssistantMessage;
  text: string;
  toolCalls: LoggedToolCall[];
  results: ToolOutcome[];
  /** The resources the model was shown for this call (the last snapshot before it). */
  resources?: ResourceSnapshot;
  /** Which of those tools the runtime added (absent when the log does not say). */
  builtinTools?: string[];
}

/** One delivery of the log and the response that answered it. */
export interface LoggedDelivery {
  submissionId: string;
  input: RecordOf<'user_message'> | RecordOf<'signal'>;
  turns: LoggedTurn[];
  /** The text of the response's last turn that had text. */
  reply: string;
  /** The summaries of the compactions its response made, in order. */
  summaries: string[];
  outcome?: SubmissionOutcome;
}

export type DivergenceKind =
  | 'instructions'
  | 'tools'
  | 'tool_calls'
  | 'tool_arguments'
  | 'tool_results'
  | 'reply_text'
  | 'turns'
  | 'outcome';

/** Where a replayed run first differs from the recording, within one delivery. */
export interface ReplayDivergence {
  /** The delivery's index in the recording (0 = the first message delivered). */
  delivery: number;
  /** The recorded submission id of that delivery. */
  submissionId: string;
  /** The model call of the delivery's response (0 = the first), or -1 for the whole delivery (its outcome). */
  turn: number;
  kind: DivergenceKind;
  recorded: unknown;
  replayed: unknown;
  message: string;
}

/** The deliveries of a log, in the order their inputs were recorded. */
export function loggedDeliveries(records: readonly ConversationRecord[]): LoggedDelivery[] {
  const deliveries = new Map<string, LoggedDelivery>();
  const steps = new Map<string, LoggedTurn>();
  let resources: ResourceSnapshot | undefined;
  let builtinTools: string[] | undefined;
  for (const record of records) {
    switch (record.type) {
      case 'user_message':
      case 'signal':
        if (record.type === 'signal' && record.origin !== 'delivery') break;
        if (record.submissionId !== undefined && !deliveries.has(record.submissionId)) {
          deliveries.set(record.submissionId, { submissionId: record.submissionId, input: record, turns: [], reply: '', summaries: [] });
        }
        break;
      case 'resource_snapshot':
        if (record.snapshot !== undefined) resources = record.snapshot;
        if (record.builtinTools !== undefined) builtinTools = record.builtinTools;
        break;
      case 'assistant_completed': {
        const delivery = deliveries.get(record.submissionId);
        if (delivery === undefined) break;
        const text = record.message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');
        const toolCalls = record.message.content.flatMap((block) =>
          block.type === 'toolCall' ? [{ id: block.id, name: block.name, arguments: block.arguments as unknown }] : [],
        );
        const turn: LoggedTurn = {
          message: record.message,
          text,
          toolCalls,
          results: [],
          ...(resources ? { resources } : {}),
          ...(builtinTools ? { builtinTools } : {}),
        };
        delivery.turns.push(turn);
        steps.set(record.stepId, turn);
        if (text !== '') delivery.reply = text;
        break;
      }
      case 'tool_results': {
        const turn = steps.get(record.stepId);
        if (turn !== undefined) turn.results.push(...record.outcomes);
        break;
      }
      case 'compaction': {
        // A compaction from before records named their submission belongs to the latest delivery.
        const delivery = record.submissionId === undefined ? [...deliveries.values()].at(-1) : deliveries.get(record.submissionId);
        delivery?.summaries.push(record.summary);
        break;
      }
      case 'submission_settled': {
        const delivery = deliveries.get(record.submissionId);
        if (delivery !== undefined) delivery.outcome = record.outcome;
        break;
      }
      case 'conversation_created':
      case 'assistant_started':
      case 'assistant_delta':
      case 'tool_progress':
      case 'model_spend':
      case 'agent_start_run':
      case 'agent_finish_cycle':
      case 'data_write':
      case 'response_metadata':
      case 'child_session_retained':
        break;
      default:
        skipUnknown(record);
    }
  }
  return [...deliveries.values()];
}

/** The tool result as the model saw it: its text and whether it was an error. */
function resultOf(outcome: ToolOutcome | undefined): { isError: boolean; content: string } | undefined {
  return outcome === undefined ? undefined : { isError: outcome.isError, content: outcome.content };
}

/**
 * The tools shown to the model at a turn, as far as the agent defines them: its own tools whole
 * (name, description, input schema), the ones the runtime added (`added`: its own and the
 * sandbox's built-ins) by name only, since their text is the runtime's and an upgrade may reword it.
 */
function toolShape(turn: LoggedTurn, added: ReadonlySet<string>): unknown {
  return (turn.resources?.tools ?? []).map((tool) =>
    added.has(tool.name) ? { name: tool.name } : { name: tool.name, description: tool.description, schema: tool.schema ?? null },
  );
}

/**
 * The tools either run says the runtime added, and the names no agent may declare: a recording
 * from before the log said which were added is compared with a replay that says so.
 */
function runtimeAdded(a: LoggedTurn, b: LoggedTurn): ReadonlySet<string> {
  return new Set([...RESERVED_TOOL_NAMES, ...(a.builtinTools ?? []), ...(b.builtinTools ?? [])]);
}

/**
 * Where each replayed delivery first diverges from the recorded one, turn by turn: what the model
 * was shown (instructions, tools), then what it asked for (tool calls, their arguments), what the
 * tools returned, and the reply text; then the delivery's outcome. One divergence per delivery at
 * most: after the first, the runs are no longer comparable turn by turn.
 */
export function divergences(recorded: readonly LoggedDelivery[], replayed: readonly LoggedDelivery[]): ReplayDivergence[] {
  const found: ReplayDivergence[] = [];
  recorded.forEach((want, delivery) => {
    const got = replayed[delivery];
    const at = (turn: number, kind: DivergenceKind, recordedValue: unknown, replayedValue: unknown, message: string): void => {
      found.push({ delivery, submissionId: want.submissionId, turn, kind, recorded: recordedValue, replayed: replayedValue, message });
    };
    if (got === undefined) {
      at(-1, 'outcome', want.outcome ?? null, null, `delivery ${delivery} was not replayed`);
      return;
    }
    const turns = Math.max(want.turns.length, got.turns.length);
    for (let turn = 0; turn < turns; turn++) {
      const a = want.turns[turn];
      const b = got.turns[turn];
      const where = `delivery ${delivery}, turn ${turn}`;
      if (a === undefined || b === undefined) {
        at(
          turn,
          'turns',
          want.turns.length,
          got.turns.length,
          `${where}: the recording has ${want.turns.length} model calls, the replay ${got.turns.length}`,
        );
        return;
      }
      if ((a.resources?.instructionsDigest ?? '') !== (b.resources?.instructionsDigest ?? '')) {
        at(
          turn,
          'instructions',
          a.resources?.instructionsDigest ?? null,
          b.resources?.instructionsDigest ?? null,
          `${where}: the instructions differ`,
        );
        return;
      }
      const added = runtimeAdded(a, b);
      if (!deepEqualJson(toolShape(a, added), toolShape(b, added))) {
        at(turn, 'tools', toolShape(a, added), toolShape(b, added), `${where}: the tools shown to the model differ`);
        return;
      }
      const names = (turnOf: LoggedTurn) => turnOf.toolCalls.map((call) => call.name);
      if (!deepEqualJson(names(a), names(b))) {
        at(
          turn,
          'tool_calls',
          names(a),
          names(b),
          `${where}: the model called ${JSON.stringify(names(b))}, recorded ${JSON.stringify(names(a))}`,
        );
        return;
      }
      for (let index = 0; index < a.toolCalls.length; index++) {
        const call = a.toolCalls[index]!;
        const other = b.toolCalls[index]!;
        if (!deepEqualJson(call.arguments, other.arguments)) {
          at(turn, 'tool_arguments', call.arguments, other.arguments, `${where}: ${call.name} was called with other arguments`);
          return;
        }
        const mine = resultOf(a.results.find((outcome) => outcome.toolCallId === call.id));
        const theirs = resultOf(b.results.find((outcome) => outcome.toolCallId === other.id));
        if (!deepEqualJson(mine ?? null, theirs ?? null)) {
          at(turn, 'tool_results', mine ?? null, theirs ?? null, `${where}: ${call.name} returned something else`);
          return;
        }
      }
      if (a.text !== b.text) {
        at(turn, 'reply_text', a.text, b.text, `${where}: the model's text differs`);
        return;
      }
    }
    if ((want.outcome ?? null) !== (got.outcome ?? null)) {
      at(
        -1,
        'outcome',
        want.outcome ?? null,
        got.outcome ?? null,
        `delivery ${delivery}: settled ${got.outcome ?? 'never'}, recorded ${want.outcome ?? 'never'}`,
      );
    }
  });
  return found;
}
