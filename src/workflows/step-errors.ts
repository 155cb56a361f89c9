/**
 * How an agent step's failure crosses the Workflow step boundary (workflows-and-schedules.md §4).
 *
 * A step's error reaches the Workflows engine, and `run()` after it, as a name and a message only:
 * class, fields and cause are lost on the way. So the failure travels in the message: a readable
 * sentence followed by a JSON trailer, `[flue:agent-step {...}]`, which the helpers parse back in
 * `run()` into an {@link AgentStepError} with typed fields. The trailer is the only structured
 * part; the sentence is prose.
 */
import { NonRetryableError } from 'cloudflare:workflows';

const TRAILER = '[flue:agent-step ';

/** What went wrong in an agent step. */
export interface AgentStepFailure {
  /** The Workflow step that failed, e.g. `review:read`. */
  step: string;
  /**
   * `failed` / `aborted`: the submission settled that way (the agent ran and did not complete).
   * `rejected`: the agent never ran it: the dispatch was refused (invalid request, a uid
   * condition, an idempotency-key conflict) or the read targeted a missing instance.
   */
  outcome: 'failed' | 'aborted' | 'rejected';
  /** The Flue error code: the settlement cause's `type`, or the rejection's `type`. */
  type?: string;
  /** The agent instance id. */
  id: string;
  /** The submission, when one was admitted. */
  submissionId?: string;
  /** The cause's message (prose). */
  message: string;
}

/**
 * Thrown by the helpers in `run()` when an agent step failed deterministically. It is deliberately
 * not named `NonRetryableError`: when `run()` lets it escape, the Workflow instance fails with a
 * message that still carries the outcome (`AgentStepError: [flue] …`; RPC keeps the class name
 * only as that prefix), whereas an escaping `NonRetryableError` is reported with a generic message
 * unless the `workflows_preserve_non_retryable_error_message` compatibility flag is on.
 */
export class AgentStepError extends Error {
  readonly step: string;
  readonly outcome: AgentStepFailure['outcome'];
  readonly type: string | undefined;
  readonly id: string;
  readonly submissionId: string | undefined;
  /** The same failure as a plain object. */
  readonly failure: AgentStepFailure;

  constructor(failure: AgentStepFailure) {
    super(describe(failure));
    this.name = 'AgentStepError';
    this.step = failure.step;
    this.outcome = failure.outcome;
    this.type = failure.type;
    this.id = failure.id;
    this.submissionId = failure.submissionId;
    this.failure = failure;
  }
}

function describe(failure: AgentStepFailure): string {
  const subject =
    failure.outcome === 'rejected'
      ? `agent instance "${failure.id}" rejected the step`
      : `submission "${failure.submissionId}" of agent instance "${failure.id}" settled ${failure.outcome}`;
  const code = failure.type === undefined ? '' : ` (${failure.type})`;
  return `[flue] ${failure.step}: ${subject}${code}: ${failure.message} ${TRAILER}${JSON.stringify(failure)}]`;
}

/** Inside a step body: the error that ends the step without retries. */
export function nonRetryable(failure: AgentStepFailure): Error {
  return new NonRetryableError(describe(failure));
}

/**
 * The {@link AgentStepError} an error (or any `{ message }`, such as a failed instance's
 * `status().error`) stands for; undefined when it is not an agent step failure (a transient error
 * whose retries ran out, a step timeout, …). The helpers use it in `run()`.
 */
export function toAgentStepError(error: unknown): AgentStepError | undefined {
  if (error instanceof AgentStepError) return error;
  const message = (error as { message?: unknown } | null)?.message;
  if (typeof message !== 'string') return undefined;
  const failure = parseTrailer(message);
  return failure === undefined ? undefined : new AgentStepError(failure);
}

function parseTrailer(message: string): AgentStepFailure | undefined {
  const start = message.lastIndexOf(TRAILER);
  if (start === -1) return undefined;
  const rest = message.slice(start + TRAILER.length);
  // The engine may wrap the message (quotes, prefixes): try each `}]` until the JSON parses.
  for (let end = rest.indexOf('}]'); end !== -1; end = rest.indexOf('}]', end + 1)) {
    try {
      const value = JSON.parse(rest.slice(0, end + 1)) as Partial<AgentStepFailure>;
      if (isFailure(value)) return value;
    } catch {
      // not the end of the JSON yet
    }
  }
  return undefined;
}

function isFailure(value: Partial<AgentStepFailure>): value is AgentStepFailure {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof value.step === 'string' &&
    typeof value.id === 'string' &&
    typeof value.message === 'string' &&
    (value.outcome === 'failed' || value.outcome === 'aborted' || value.outcome === 'rejected')
  );
}
