/**
 * The recovery rules of docs/design/durability.md (§3–§9) as tables: given this log and ledger
 * (and this crash point), one attempt of the engine appends exactly these batches. Every expected
 * record is written from the design, not copied from a run (recovery-tables.fixtures.ts);
 * recovery-journal.fixtures.ts seeds the store and normalizes ids (`msg_1`, `sub_1`, … in order of
 * first appearance) and clocks (`'ts'`).
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Agent } from '../authoring/identity.ts';
import { type ConversationRecord, interruptedToolText } from '../store/records.ts';
import { type Attempt, type CrashAt, type Given, type LedgerRow, runAttempt } from './recovery-journal.fixtures.ts';
import type { ScriptedStep } from './scripted-stream.fixtures.ts';
import {
  Boss,
  Budgeted,
  Capped,
  Cramped,
  Demoted,
  Extended,
  Forgetful,
  Greeter,
  Impatient,
  Manager,
  Promoted,
  Relabelled,
  Renamed,
  Reporting,
  Shop,
  Stricter,
  Switched,
  Tagged,
  Trimmed,
  runs,
  CHILD,
  GIVEN_TS,
  advisory,
  answers,
  applied,
  closed,
  delegated,
  delegating,
  first,
  input,
  interrupted,
  issued,
  modelMessage,
  opened,
  opening,
  progressed,
  retried,
  settled,
  snapshot,
  step,
  streamSignal,
  text,
  toolCall,
  toolResults,
  tokensUsage,
  ts,
} from './recovery-tables.fixtures.ts';

beforeEach(() => {
  runs.plain = runs.reserve = runs.capture = runs.agentStart = runs.responseStart = 0;
});

// ── The tables ──────────────────────────────────────────────────────────────────────────────

interface Case {
  rule: string;
  agent: Agent;
  given: Given;
  crashAt?: CrashAt;
  sliceBudgetMs?: number;
  script: ScriptedStep[];
  appends: unknown[][];
  /** Batches appended to other streams (a task's child conversation). */
  streams?: Record<string, unknown[][]>;
  ledger: Record<string, Partial<LedgerRow>>;
  /** Committed persistent state after the attempt (default: none). */
  state?: Record<string, unknown>;
  /** Recorded durable step memos after the attempt, by `<step id>:<call id>/<step>` (default: none). */
  steps?: Record<string, unknown>;
  /** How often tool bodies, step fns and hooks ran in this attempt. */
  ran?: Partial<typeof runs>;
}

const cases: Case[] = [
  {
    rule: '§6.1.1 a first attempt nobody follows applies the input with the first batch it writes, runs the turn and settles completed',
    agent: Shop,
    given: { submissions: first },
    script: [{ text: ['Hello.'] }],
    appends: opening(input('sub_a', 'go'), answers({ message: 'msg_1', step: 'msg_2' }, 'Hello.')),
    ledger: { sub_a: { status: 'settled', outcome: 'completed', attempts: 1 } },
  },
  {
    rule: '§6.1.1 an input already in the log is not applied again by a recovered attempt',
    agent: Shop,
    given: { log: [applied], submissions: retried },
    script: [{ text: ['Hello.'] }],
    appends: answers({ message: 'msg_1', step: 'msg_2' }, 'Hello.'),
    ledger: { sub_a: { status: 'settled', outcome: 'completed', attempts: 2 } },
  },
  {
    rule: '§6.1.2 an open step that said something is closed as aborted with stream_interrupted and stream_continued, then the turn continues',
    agent: Shop,
    given: { log: [applied, opened(['Half ', 'a'])], submissions: retried },
    script: [{ text: ['Whole answer.'] }],
    appends: [
      [closed('step_open', ['Half a']), streamSignal('stream_interrupted', 'step_open'), streamSignal('stream_continued', 'step_open')],
      ...answers({ message: 'msg_r', step: 'msg_1' }, 'Whole answer.'),
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'completed', attempts: 2 } },
  },
  {
    rule: '§6.1.2 an open step that only reasoned counts as having said something: its thinking is kept and the model is told',
    agent: Shop,
    given: { log: [applied, opened(['Let me think'], 'reasoning')], submissions: retried },
    script: [{ text: ['Answer.'] }],
    appends: [
      [
        closed('step_open', ['Let me think'], 'reasoning'),
        streamSignal('stream_interrupted', 'step_open'),
        streamSignal('stream_continued', 'step_open'),
      ],
      ...answers({ message: 'msg_r', step: 'msg_1' }, 'Answer.'),
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'completed' } },
  },
  {
    rule: '§6.1.2 an open step that said nothing is closed silently',
    agent: Shop,
    given: { log: [applied, opened([])], submissions: retried },
    script: [{ text: ['Answer.'] }],
    appends: [[closed('step_open', [])], ...answers({ message: 'msg_r', step: 'msg_1' }, 'Answer.')],
    ledger: { sub_a: { status: 'settled', outcome: 'completed' } },
  },
  {
    rule: '§6.2 an unresolved ordinary tool call is not re-run: it gets the interrupted marker the model sees',
    agent: Shop,
    given: { log: [applied, issued({ id: 'call_1', name: 'plain' })], submissions: retried },
    script: [{ text: ['Sorry, again?'] }],
    appends: [[toolResults('step_1', [interrupted('call_1', 'plain')])], ...answers({ message: 'msg_r', step: 'msg_1' }, 'Sorry, again?')],
    ledger: { sub_a: { status: 'settled', outcome: 'completed' } },
    ran: { plain: 0 },
  },
  {
    rule: '§6.2/§7 an unresolved durable tool call re-runs: a recorded step is replayed, not run again; the rest runs',
    agent: Shop,
    given: {
      log: [applied, issued({ id: 'call_1', name: 'charge' })],
      submissions: retried,
      steps: [{ key: 'step_1:call_1', step: 'reserve', value: 'r1' }],
    },
    script: [{ text: ['Charged.'] }],
    appends: [
      [
        toolResults('step_1', [
          {
            toolCallId: 'call_1',
            toolName: 'charge',
            isError: false,
            content: '"r1+c1"',
            output: 'r1+c1',
            durationMs: 'ms',
          },
        ]),
      ],
      ...answers({ message: 'msg_r', step: 'msg_1' }, 'Charged.'),
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'completed' } },
    steps: { 'step_1:call_1/reserve': 'r1', 'step_1:call_1/capture': 'c1' },
    ran: { reserve: 0, capture: 1 },
  },
  {
    rule: '§6.2 a recovered durable call keeps the progress lines committed before the crash, and its re-run appends its own before the result',
    agent: Reporting,
    given: {
      log: [applied, issued({ id: 'call_1', name: 'charge' }), [progressed(['reserving'])]],
      submissions: retried,
      steps: [{ key: 'step_1:call_1', step: 'reserve', value: 'r1' }],
    },
    script: [{ text: ['Charged.'] }],
    appends: [
      // The re-run logs from its start; the call's end commits its lines before its result.
      [progressed(['reserving', 'capturing'], 'ts')],
      [
        toolResults('step_1', [
          { toolCallId: 'call_1', toolName: 'charge', isError: false, content: '"r1+c1"', output: 'r1+c1', durationMs: 'ms' },
        ]),
      ],
      ...answers({ message: 'msg_r', step: 'msg_1' }, 'Charged.'),
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'completed' } },
    steps: { 'step_1:call_1/reserve': 'r1', 'step_1:call_1/capture': 'c1' },
    ran: { reserve: 0, capture: 1 },
  },
  {
    rule: '§6.2 an unresolved call of a tool the render no longer declares durable takes the interrupted path',
    agent: Forgetful,
    given: {
      log: [applied, issued({ id: 'call_1', name: 'charge' })],
      submissions: retried,
      steps: [{ key: 'step_1:call_1', step: 'reserve', value: 'r1' }],
    },
    script: [{ text: ['Sorry.'] }],
    appends: [[toolResults('step_1', [interrupted('call_1', 'charge')])], ...answers({ message: 'msg_r', step: 'msg_1' }, 'Sorry.')],
    ledger: { sub_a: { status: 'settled', outcome: 'completed' } },
    steps: { 'step_1:call_1/reserve': 'r1' },
    ran: { reserve: 0, capture: 0 },
  },
  {
    rule: "§6.2 an unresolved task call resumes its child conversation and commits the child's real result",
    agent: Boss,
    given: delegated,
    // The child's turn first (inside the parent's tool batch), then the parent's.
    script: [{ text: ['Found.'] }, { text: ['The helper found it.'] }],
    appends: [
      [
        toolResults('step_1', [
          { toolCallId: 'call_1', toolName: 'task', isError: false, content: 'Found.', output: 'Found.', durationMs: 'ms' },
        ]),
      ],
      ...answers({ message: 'msg_r', step: 'msg_1' }, 'The helper found it.'),
    ],
    streams: { [CHILD]: [[snapshot, ...step({ message: 'msg_2', step: 'msg_3' }, 'Found.')]] },
    ledger: { sub_a: { status: 'settled', outcome: 'completed' } },
  },
  {
    rule: '§6.1.1/§9 useResponseStart runs while the response has no durable step: its metadata opens the first step',
    agent: Tagged,
    given: { log: [applied], submissions: retried },
    script: [{ text: ['Tagged.'] }],
    appends: [
      [
        snapshot,
        ...step({ message: 'msg_1', step: 'msg_2' }, 'Tagged.').map((record) =>
          record.type === 'assistant_started' ? { ...record, metadata: { tag: 'first' } } : record,
        ),
        settled('sub_a', 'completed'),
      ],
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'completed' } },
    ran: { responseStart: 1 },
  },
  {
    rule: '§9 useResponseStart does not run again once the response has a durable step',
    agent: Tagged,
    given: { log: [applied, opened([])], submissions: retried },
    script: [{ text: ['Again.'] }],
    appends: [[closed('step_open', [])], ...answers({ message: 'msg_r', step: 'msg_1' }, 'Again.')],
    ledger: { sub_a: { status: 'settled', outcome: 'completed' } },
    ran: { responseStart: 0 },
  },
  {
    rule: '§6.1 a compaction committed before a turn is not redone after a crash: the attempt sends the context fitted to the window and streams the step',
    agent: Cramped,
    given: {
      log: [
        [
          {
            type: 'user_message',
            messageId: 'msg_in_sub_a',
            submissionId: 'sub_a',
            deliveryOrigin: 'app',
            body: 'a'.repeat(8000),
            ts: GIVEN_TS,
          },
        ],
        [1, 2].map(
          (n): ConversationRecord => ({
            type: 'signal',
            messageId: `msg_note_${n}`,
            submissionId: 'sub_a',
            origin: 'append',
            signalType: 'note',
            body: String(n).repeat(8000),
            ts: GIVEN_TS,
          }),
        ),
        // Still over the window after it (nothing was cut): only the request fit brings it in.
        [
          {
            type: 'compaction',
            summary: 'Earlier.',
            firstKept: 0,
            tokensBefore: 6000,
            usage: tokensUsage(7),
            submissionId: 'sub_a',
            modelCalls: 1,
            ts: GIVEN_TS,
          },
        ],
      ],
      submissions: retried,
    },
    script: [{ text: ['Read.'] }],
    appends: answers({ message: 'msg_1', step: 'msg_2' }, 'Read.'),
    ledger: { sub_a: { status: 'settled', outcome: 'completed' } },
  },
  {
    rule: '§9 useAgentStart that committed its marker is not run again',
    agent: Greeter,
    given: {
      log: [
        applied,
        [
          {
            type: 'signal',
            messageId: 'msg_note',
            submissionId: 'sub_a',
            origin: 'append',
            signalType: 'note',
            body: 'remember',
            ts: GIVEN_TS,
          },
          { type: 'agent_start_run', submissionId: 'sub_a' },
        ],
      ],
      submissions: retried,
    },
    script: [{ text: ['Hi.'] }],
    appends: answers({ message: 'msg_1', step: 'msg_2' }, 'Hi.'),
    ledger: { sub_a: { status: 'settled', outcome: 'completed' } },
    ran: { agentStart: 0 },
  },
  {
    rule: '§9 useAgentStart without a committed marker runs (again): its appends commit with the marker',
    agent: Greeter,
    given: { log: [applied], submissions: retried },
    script: [{ text: ['Hi.'] }],
    appends: [
      [
        { type: 'signal', messageId: 'msg_1', submissionId: 'sub_a', origin: 'append', signalType: 'note', body: 'remember', ts },
        { type: 'agent_start_run', submissionId: 'sub_a' },
      ],
      ...answers({ message: 'msg_2', step: 'msg_3' }, 'Hi.'),
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'completed' } },
    ran: { agentStart: 1 },
  },
  {
    rule: '§3 a delivery queued behind the head joins its response at the first turn boundary, before the model is called',
    agent: Shop,
    given: { submissions: [...first, { id: 'sub_b', body: 'and this' }] },
    script: [{ text: ['Both.'] }],
    appends: [
      [input('sub_a', 'go'), input('sub_b', 'and this', 'sub_a')],
      [snapshot, ...step({ message: 'msg_1', step: 'msg_2' }, 'Both.'), settled('sub_a', 'completed'), settled('sub_b', 'completed')],
    ],
    ledger: {
      sub_a: { status: 'settled', outcome: 'completed', attempts: 1 },
      sub_b: { status: 'settled', outcome: 'completed', attempts: 0 },
    },
  },
  {
    rule: "§3/§6.1.4 a delivery queued while a step streams joins at the next turn boundary, after the step's tool results, and takes the host's outcome",
    agent: Shop,
    given: { submissions: first },
    script: [{ toolCalls: [{ id: 'call_1', name: 'plain', arguments: {} }], deliver: 'also this' }, { text: ['Both done.'] }],
    appends: [
      [input('sub_a', 'go'), snapshot, ...step({ message: 'msg_1', step: 'msg_2' }, undefined, [toolCall('call_1', 'plain')])],
      [
        toolResults(
          'msg_2',
          [{ toolCallId: 'call_1', toolName: 'plain', isError: false, content: '"ok"', output: 'ok', durationMs: 'ms' }],
          'msg_1',
        ),
      ],
      [input('sub_1', 'also this', 'sub_a')],
      [...step({ message: 'msg_1', step: 'msg_3' }, 'Both done.'), settled('sub_a', 'completed'), settled('sub_1', 'completed')],
    ],
    ledger: {
      sub_a: { status: 'settled', outcome: 'completed', attempts: 1 },
      sub_1: { status: 'settled', outcome: 'completed', attempts: 0 },
    },
    state: { count: 1 },
    ran: { plain: 1 },
  },
  {
    rule: '§5/§10 the yield rule: past the slice budget a wake yields after progress, never between a step and its tool calls',
    agent: Shop,
    given: { submissions: first },
    sliceBudgetMs: -1,
    script: [{ toolCalls: [{ id: 'call_1', name: 'plain', arguments: {} }] }],
    appends: [
      [input('sub_a', 'go'), snapshot, ...step({ message: 'msg_1', step: 'msg_2' }, undefined, [toolCall('call_1', 'plain')])],
      [
        toolResults(
          'msg_2',
          [{ toolCallId: 'call_1', toolName: 'plain', isError: false, content: '"ok"', output: 'ok', durationMs: 'ms' }],
          'msg_1',
        ),
      ],
    ],
    ledger: { sub_a: { status: 'running', outcome: null, attempts: 1, continuation: true } },
    state: { count: 1 },
    ran: { plain: 1 },
  },
  {
    rule: '§5/§10 the yield rule: a continued wake makes progress before it yields again, in the same attempt (here the step that ends the response, settling it)',
    agent: Shop,
    given: {
      log: [
        applied,
        issued({ id: 'call_1', name: 'plain' }),
        [
          toolResults('step_1', [
            { toolCallId: 'call_1', toolName: 'plain', isError: false, content: '"ok"', output: 'ok' },
          ]) as ConversationRecord,
        ],
      ],
      submissions: [{ id: 'sub_a', body: 'go', attempts: 1, continuation: true }],
    },
    sliceBudgetMs: -1,
    script: [{ text: ['Done.'] }],
    appends: [[snapshot, ...step({ message: 'msg_r', step: 'msg_1' }, 'Done.'), settled('sub_a', 'completed')]],
    ledger: { sub_a: { status: 'settled', outcome: 'completed', attempts: 1 } },
  },
  {
    rule: '§4/§6.3 a model error fails the submission: the advisory signal and the settlement commit together',
    agent: Shop,
    given: { submissions: first },
    script: [{ error: 'The model refused.' }],
    appends: [
      [
        input('sub_a', 'go'),
        snapshot,
        { type: 'assistant_started', messageId: 'msg_1', stepId: 'msg_2', submissionId: 'sub_a', attemptId: 'attempt_1', ts },
        {
          type: 'assistant_completed',
          messageId: 'msg_1',
          stepId: 'msg_2',
          submissionId: 'sub_a',
          message: modelMessage([], 'error', 'The model refused.'),
          ts,
        },
      ],
      [
        advisory('interrupted', 'The submission failed: The prompt operation failed: The model refused.', { reason: 'failed' }),
        settled('sub_a', 'failed', {
          name: 'FlueError',
          type: 'operation_failed',
          message: 'The prompt operation failed: The model refused.',
          meta: { operation: 'prompt', reason: 'The model refused.' },
        }),
      ],
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'failed', attempts: 1 } },
  },
  {
    rule: '§5/§6.3 an exhausted attempt budget fails before any work: pending calls are interrupted in the settlement batch',
    agent: Budgeted,
    given: { log: [applied, issued({ id: 'call_1', name: 'plain' })], submissions: [{ id: 'sub_a', body: 'go', attempts: 2 }] },
    script: [],
    appends: [
      [
        toolResults('step_1', [interrupted('call_1', 'plain')]),
        advisory(
          'interrupted',
          'The submission failed: The submission was interrupted 2 times and reached its attempt budget (2). Interrupted tool calls: plain.',
          {
            reason: 'exhausted_retry_budget',
            interruptedTools: 'plain',
          },
        ),
        settled('sub_a', 'failed', {
          name: 'FlueError',
          type: 'submission_retry_exhausted',
          message: 'The submission was interrupted 2 times and reached its attempt budget (2).',
          meta: { attemptCount: 2, maxAttempts: 2, interruptedTools: [{ name: 'plain', id: 'call_1' }] },
        }),
      ],
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'failed', attempts: 2 } },
    ran: { plain: 0 },
  },
  {
    rule: '§5 an exhausted budget before the input was applied fails with nothing to bring to rest',
    agent: Budgeted,
    given: { submissions: [{ id: 'sub_a', body: 'go', attempts: 2 }] },
    script: [],
    appends: [
      [
        settled('sub_a', 'failed', {
          name: 'FlueError',
          type: 'submission_retry_exhausted',
          message: 'Every attempt (2 of 2) was interrupted before the delivered input was applied.',
          meta: { phase: 'retry_exhausted_before_input', attemptCount: 2, maxAttempts: 2 },
        }),
      ],
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'failed', attempts: 2 } },
  },
  {
    rule: '§5/§6.3 a passed deadline fails the submission before a new attempt: pending calls are interrupted in the settlement batch',
    agent: Shop,
    given: {
      log: [applied, issued({ id: 'call_1', name: 'plain' })],
      submissions: [{ id: 'sub_a', body: 'go', attempts: 1, startedAt: Date.now() - 3_700_000 }],
    },
    script: [],
    appends: [
      [
        toolResults('step_1', [interrupted('call_1', 'plain')]),
        advisory(
          'interrupted',
          'The submission failed: The submission exceeded its durability timeout of 3600000ms. Interrupted tool calls: plain.',
          {
            reason: 'exceeded_timeout',
            interruptedTools: 'plain',
          },
        ),
        settled('sub_a', 'failed', {
          name: 'FlueError',
          type: 'submission_timeout',
          message: 'The submission exceeded its durability timeout of 3600000ms.',
        }),
      ],
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'failed', attempts: 1 } },
    ran: { plain: 0 },
  },
  {
    rule: '§8/§6.3 a durable abort request settles aborted before any work: an open step is closed, the advisory written',
    agent: Shop,
    given: { log: [applied, opened(['Half'])], submissions: retried, abortRequested: true },
    script: [],
    appends: [
      [
        closed('step_open', ['Half']),
        advisory('aborted', 'The submission was aborted.', { reason: 'aborted' }),
        settled('sub_a', 'aborted', { name: 'FlueError', type: 'submission_aborted', message: 'The submission was aborted.' }),
      ],
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'aborted', attempts: 1 } },
  },
  {
    rule: '§8 an abort during a model call ends the step with what it said, then settles aborted',
    agent: Shop,
    given: { submissions: first },
    script: [{ text: ['Half'], stall: true, abort: true }],
    appends: [
      [
        input('sub_a', 'go'),
        snapshot,
        { type: 'assistant_started', messageId: 'msg_1', stepId: 'msg_2', submissionId: 'sub_a', attemptId: 'attempt_1', ts },
        // Written whole: what it said is in the aborted message alone.
        {
          type: 'assistant_completed',
          messageId: 'msg_1',
          stepId: 'msg_2',
          submissionId: 'sub_a',
          message: modelMessage([text('Half')], 'aborted', 'Request was aborted'),
          ts,
        },
      ],
      [
        advisory('aborted', 'The submission was aborted.', { reason: 'aborted' }),
        settled('sub_a', 'aborted', { name: 'FlueError', type: 'submission_aborted', message: 'The submission was aborted.' }),
      ],
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'aborted' } },
  },
  {
    rule: '§5 a model stream idle past modelIdleTimeoutMs abandons the attempt: the step stays open as a crash leaves it, nothing settles',
    agent: Impatient,
    given: { submissions: first },
    script: [{ text: ['Half a'], stall: true }],
    appends: [
      [
        input('sub_a', 'go'),
        snapshot,
        { type: 'assistant_started', messageId: 'msg_1', stepId: 'msg_2', submissionId: 'sub_a', attemptId: 'attempt_1', ts },
        { type: 'assistant_delta', messageId: 'msg_1', stepId: 'msg_2', kind: 'text', block: 0, delta: 'Half a' },
      ],
    ],
    ledger: { sub_a: { status: 'running', outcome: null, attempts: 1 } },
  },
  {
    rule: "§6 a crash at a model call's first delta leaves no trace of the response: its text was not due for a commit, and its input and the turn's snapshot wait for its batch",
    agent: Shop,
    given: { submissions: first },
    crashAt: { point: 'model' },
    script: [{ text: ['Hal', 'f'] }],
    appends: [],
    ledger: { sub_a: { status: 'running', outcome: null, attempts: 1 } },
  },
  {
    rule: '§6 a crash as a tool starts writes nothing more: the step that issued the call stays, with no results',
    agent: Shop,
    given: { submissions: first },
    crashAt: { point: 'tool', tool: 'plain' },
    script: [{ toolCalls: [{ id: 'call_1', name: 'plain', arguments: {} }] }],
    appends: [[input('sub_a', 'go'), snapshot, ...step({ message: 'msg_1', step: 'msg_2' }, undefined, [toolCall('call_1', 'plain')])]],
    ledger: { sub_a: { status: 'running', outcome: null, attempts: 1 } },
    ran: { plain: 0 },
  },
  {
    rule: '§7 a crash after a step fn ran and before its memo is stored: the fn ran, nothing is recorded',
    agent: Shop,
    given: { log: [applied, issued({ id: 'call_1', name: 'charge' })], submissions: retried },
    crashAt: { point: 'step', tool: 'charge', step: 'reserve' },
    script: [],
    appends: [],
    ledger: { sub_a: { status: 'running', outcome: null, attempts: 2 } },
    ran: { reserve: 1, capture: 0 },
  },
  {
    rule: '§4 a crash just before the settlement commits leaves the submission unsettled in the log and the ledger (and the last step, which it would have committed with, and what the response held for its first batch)',
    agent: Shop,
    given: { submissions: first },
    crashAt: { point: 'settlement' },
    script: [{ text: ['Hello.'] }],
    appends: [],
    ledger: { sub_a: { status: 'running', outcome: null, attempts: 1 } },
  },
];

/** A durable `charge` call left unresolved with its `reserve` step recorded, recovered by `agent`. */
const chargeRecovered = (agent: Agent) => ({
  agent,
  given: {
    log: [applied, issued({ id: 'call_1', name: 'charge' })],
    submissions: retried,
    steps: [{ key: 'step_1:call_1', step: 'reserve', value: 'r1' }],
  },
  script: [{ text: ['Done.'] }],
  ledger: { sub_a: { status: 'settled', outcome: 'completed', attempts: 2 } } as const,
});

/** The recovered `charge` call's result, then the model's answer. */
const charged = (outcome: Record<string, unknown>) => [
  [toolResults('step_1', [{ toolCallId: 'call_1', toolName: 'charge', ...outcome }])],
  ...answers({ message: 'msg_r', step: 'msg_1' }, 'Done.'),
];

const succeeded = (output: string) => ({ isError: false, content: JSON.stringify(output), output, durationMs: 'ms' });

const notDeclared = 'Subagent "helper" is not declared. Available subagents: (none).';

/** §6.5: the log was written by the code before a deploy; the attempt runs the code after it. */
const afterDeploy: Case[] = [
  {
    rule: '§6.5 a pending call of a tool renamed or removed takes the interrupted path under its recorded name; the renamed tool does not run',
    agent: Renamed,
    given: {
      log: [applied, issued({ id: 'call_1', name: 'plain' }, { id: 'call_2', name: 'charge' })],
      submissions: retried,
      steps: [{ key: 'step_1:call_2', step: 'reserve', value: 'r1' }],
    },
    script: [{ text: ['Sorry.'] }],
    appends: [
      [toolResults('step_1', [interrupted('call_1', 'plain'), interrupted('call_2', 'charge')])],
      ...answers({ message: 'msg_r', step: 'msg_1' }, 'Sorry.'),
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'completed' } },
    steps: { 'step_1:call_2/reserve': 'r1' },
    ran: { plain: 0, reserve: 0, capture: 0 },
  },
  {
    ...chargeRecovered(Stricter),
    rule: '§6.5 a durable call whose recorded arguments no longer validate settles as the validation error the model sees; no step runs',
    appends: charged({
      isError: true,
      content:
        'Arguments for tool "charge" do not match the required schema: Invalid key: Expected "amount" but received undefined (at amount). Call the tool again with corrected arguments.',
      durationMs: 'ms',
    }),
    steps: { 'step_1:call_1/reserve': 'r1' },
  },
  {
    ...chargeRecovered(Trimmed),
    rule: '§6.5 a durable call whose recorded step is no longer asked for: the memo stays unread, the remaining steps run',
    appends: charged(succeeded('capture-new')),
    steps: { 'step_1:call_1/reserve': 'r1', 'step_1:call_1/capture': 'capture-new' },
  },
  {
    ...chargeRecovered(Extended),
    rule: '§6.5 a durable call with a step added: recorded steps replay, the new step runs in its place',
    appends: charged(succeeded('r1+verify-new+capture-new')),
    steps: { 'step_1:call_1/reserve': 'r1', 'step_1:call_1/verify': 'verify-new', 'step_1:call_1/capture': 'capture-new' },
  },
  {
    ...chargeRecovered(Relabelled),
    rule: '§6.5 a durable call whose step was renamed: the renamed step is a new step and runs',
    appends: charged(succeeded('hold-new+capture-new')),
    steps: { 'step_1:call_1/reserve': 'r1', 'step_1:call_1/hold': 'hold-new', 'step_1:call_1/capture': 'capture-new' },
  },
  {
    ...chargeRecovered(Demoted),
    rule: '§6.5 a pending call of a tool that is no longer durable takes the interrupted path, though declared',
    appends: [[toolResults('step_1', [interrupted('call_1', 'charge')])], ...answers({ message: 'msg_r', step: 'msg_1' }, 'Done.')],
    steps: { 'step_1:call_1/reserve': 'r1' },
    ran: { capture: 0 },
  },
  {
    rule: '§6.5 a pending call of a tool that became durable re-runs as durable',
    agent: Promoted,
    given: { log: [applied, issued({ id: 'call_1', name: 'plain' })], submissions: retried },
    script: [{ text: ['Counted.'] }],
    appends: [
      [toolResults('step_1', [{ toolCallId: 'call_1', toolName: 'plain', ...succeeded('ok') }])],
      ...answers({ message: 'msg_r', step: 'msg_1' }, 'Counted.'),
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'completed' } },
    steps: { 'step_1:call_1/count': 'ok' },
    ran: { plain: 1 },
  },
  {
    rule: '§6.5 a render that names another model: the recovered attempt continues the conversation on it',
    agent: Switched,
    given: { log: [applied, opened(['Half'])], submissions: retried },
    script: [{ text: ['Whole.'] }],
    appends: [
      [closed('step_open', ['Half']), streamSignal('stream_interrupted', 'step_open'), streamSignal('stream_continued', 'step_open')],
      ...answers({ message: 'msg_r', step: 'msg_1', model: 'next' }, 'Whole.'),
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'completed' } },
  },
  {
    rule: '§6.5 a task call whose subagent was removed after its child was born gets the interrupted marker naming the child; the child does not run',
    agent: Manager,
    given: delegated,
    script: [{ text: ['The helper is gone.'] }],
    appends: [
      [
        toolResults('step_1', [
          { toolCallId: 'call_1', toolName: 'task', isError: true, content: interruptedToolText('conv_child'), durationMs: 'ms' },
        ]),
      ],
      ...answers({ message: 'msg_r', step: 'msg_1' }, 'The helper is gone.'),
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'completed' } },
  },
  {
    rule: '§6.5 a task call whose subagent was removed before its child was born is answered as a fresh call would be: not declared; no child is born',
    agent: Manager,
    given: { log: [applied, delegating], submissions: retried },
    script: [{ text: ['No helper.'] }],
    appends: [
      [
        toolResults('step_1', [
          { toolCallId: 'call_1', toolName: 'task', isError: false, content: notDeclared, output: notDeclared, durationMs: 'ms' },
        ]),
      ],
      ...answers({ message: 'msg_r', step: 'msg_1' }, 'No helper.'),
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'completed' } },
  },
];

// ── The usage ledger and budgets (durability.md §12) ─────────────────────────────────────────

/** `records` with each completed step's provider usage set to `tokens` input tokens. */
function spending<T>(records: T[], tokens: number): T[] {
  return records.map((record) => {
    const completed = record as { type?: string; message?: object };
    if (completed.type !== 'assistant_completed') return record;
    return { ...record, message: { ...completed.message, usage: tokensUsage(tokens) } };
  });
}

// Capitals: the id normalizer's `[a-z]+` scan would backtrack over a long lower-case run.
const LONG_ANSWER = 'Y'.repeat(100_000);

const BUDGET_MESSAGE = 'The submission reached its budget: tokens spent 100 of budget.perSubmission.maxTokens 100.';
const budgetError = {
  name: 'BudgetExceededError',
  type: 'budget_exceeded',
  message: BUDGET_MESSAGE,
  details: "Raise the agent's budget.perSubmission static, or ask for less in one submission.",
  meta: { scope: 'submission', limit: 'maxTokens', budget: 100, spent: 100 },
};

const ledgerCases: Case[] = [
  {
    rule: '§12 the settlement records what every model call of the submission spent, a dead attempt’s calls included, with its tool calls and attempts',
    agent: Shop,
    given: { log: [applied, spending(issued({ id: 'call_1', name: 'plain' }), 40)], submissions: retried },
    script: [{ text: ['Sorry, again?'], tokens: 2 }],
    appends: [
      [toolResults('step_1', [interrupted('call_1', 'plain')])],
      [
        snapshot,
        ...spending(step({ message: 'msg_r', step: 'msg_1' }, 'Sorry, again?'), 2),
        settled('sub_a', 'completed', undefined, 'sub_a', { usage: tokensUsage(42), modelCalls: 2, toolCalls: 1, attempts: 2 }),
      ],
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'completed', attempts: 2 } },
  },
  {
    rule: '§12 a compaction the response made counts in its ledger entry, each summarization call a model call',
    agent: Shop,
    given: {
      log: [
        applied,
        spending(issued({ id: 'call_1', name: 'plain' }), 40),
        [
          {
            type: 'compaction',
            summary: 'Earlier.',
            firstKept: 0,
            tokensBefore: 50,
            usage: tokensUsage(7),
            submissionId: 'sub_a',
            modelCalls: 2,
            ts: GIVEN_TS,
          },
        ],
      ],
      submissions: retried,
    },
    script: [{ text: ['Sorry, again?'] }],
    appends: [
      [toolResults('step_1', [interrupted('call_1', 'plain')])],
      [
        snapshot,
        ...step({ message: 'msg_r', step: 'msg_1' }, 'Sorry, again?'),
        settled('sub_a', 'completed', undefined, 'sub_a', { usage: tokensUsage(47), modelCalls: 4, toolCalls: 1, attempts: 2 }),
      ],
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'completed', attempts: 2 } },
  },
  {
    rule: '§12 a summarization that fails still counts: its call rides on the response’s next batch as a model_spend record, and the response goes on uncompacted',
    agent: Shop,
    given: {
      // Earlier history the threshold compaction can summarize.
      log: [
        [{ type: 'user_message', messageId: 'msg_in_sub_0', submissionId: 'sub_0', deliveryOrigin: 'app', body: 'earlier', ts: GIVEN_TS }],
      ],
      submissions: first,
    },
    // A long answer (kept, ~25k estimated tokens) reports a context near the 128k window; the summarizer then fails.
    script: [{ text: [LONG_ANSWER], tokens: 127_000 }, { error: 'summarizer down' }],
    appends: [
      [input('sub_a', 'go'), snapshot, ...spending(step({ message: 'msg_1', step: 'msg_2' }, LONG_ANSWER), 127_000)],
      [{ type: 'model_spend', submissionId: 'sub_a', source: 'compaction', usage: tokensUsage(0), modelCalls: 1 }],
      [settled('sub_a', 'completed', undefined, 'sub_a', { usage: tokensUsage(127_000), modelCalls: 2, toolCalls: 0, attempts: 1 })],
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'completed', attempts: 1 } },
  },
  {
    rule: '§12 a log whose usage is at the per-submission budget: the next attempt is never claimed, the submission settles failed with budget_exceeded',
    agent: Capped,
    given: { log: [applied, spending(issued({ id: 'call_1', name: 'plain' }), 100)], submissions: retried },
    script: [],
    appends: [
      [
        toolResults('step_1', [interrupted('call_1', 'plain')]),
        advisory('interrupted', `The submission failed: ${BUDGET_MESSAGE} Interrupted tool calls: plain.`, {
          reason: 'exceeded_budget',
          interruptedTools: 'plain',
        }),
        settled('sub_a', 'failed', budgetError, 'sub_a', { usage: tokensUsage(100), modelCalls: 1, toolCalls: 0, attempts: 1 }),
      ],
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'failed', attempts: 1 } },
  },
  {
    rule: '§12 a step that reaches the per-submission budget: its tool calls run, and the response stops at the next turn boundary, before the model is called again',
    agent: Capped,
    given: { submissions: first },
    script: [{ toolCalls: [{ id: 'call_1', name: 'plain', arguments: {} }], tokens: 100 }],
    appends: [
      [
        input('sub_a', 'go'),
        snapshot,
        ...spending(step({ message: 'msg_1', step: 'msg_2' }, undefined, [toolCall('call_1', 'plain')]), 100),
      ],
      [
        toolResults(
          'msg_2',
          [{ toolCallId: 'call_1', toolName: 'plain', isError: false, content: '"ok"', output: 'ok', durationMs: 'ms' }],
          'msg_1',
        ),
      ],
      [
        advisory('interrupted', `The submission failed: ${BUDGET_MESSAGE}`, { reason: 'exceeded_budget' }),
        settled('sub_a', 'failed', budgetError, 'sub_a', { usage: tokensUsage(100), modelCalls: 1, toolCalls: 1, attempts: 1 }),
      ],
    ],
    ledger: { sub_a: { status: 'settled', outcome: 'failed', attempts: 1 } },
    state: { count: 1 },
    ran: { plain: 1 },
  },
];

describe('recovery rules (durability.md): given this log, one attempt appends exactly these batches', () => {
  it.each([...cases, ...afterDeploy, ...ledgerCases])('$rule', async (table) => expectAttempt(table));
});

// A checkpoint is the fold of a prefix of the log; the batches after it (the last one here: a
// crash after its batch, before a checkpoint for it) are folded on top. Recovery must not tell.
const withLog = [...cases, ...afterDeploy, ...ledgerCases].filter((table) => (table.given.log?.length ?? 0) >= 1);
describe('the same rules when the conversation wakes from a checkpoint that lags its log by a batch', () => {
  it.each(withLog)('$rule', async (table) => expectAttempt(table, table.given.log!.length - 1));
});

async function expectAttempt(table: Case, checkpointAt?: number): Promise<void> {
  const attempt: Attempt = { agent: table.agent, given: table.given, script: table.script };
  if (table.crashAt !== undefined) attempt.crashAt = table.crashAt;
  if (table.sliceBudgetMs !== undefined) attempt.sliceBudgetMs = table.sliceBudgetMs;
  if (checkpointAt !== undefined) attempt.checkpointAt = checkpointAt;
  const result = await runAttempt(attempt);
  expect(result.firstRead).toBe(checkpointAt ?? -1);
  expect(result.appends).toEqual(table.appends);
  expect(result.streams).toEqual(table.streams ?? {});
  for (const [id, row] of Object.entries(table.ledger)) expect(result.ledger[id]).toMatchObject(row);
  expect(result.state).toEqual(table.state ?? {});
  expect(result.steps).toEqual(table.steps ?? {});
  expect(result.crashed).toBe(table.crashAt !== undefined);
  // Every scripted answer was asked for.
  expect(result.scriptLeft).toBe(0);
  expect(runs).toMatchObject(table.ran ?? {});
}
