/**
 * A process-wide seam that answers tool calls instead of running them: a replay of a recorded
 * conversation (`@flue/runtime/testing`) answers a call with its recorded result. Production never
 * installs one: each call costs one read of a global slot.
 */
import type { FlueExecutionContext } from '../common/instrumentation.ts';

export interface ToolAnswerQuestion {
  context: FlueExecutionContext;
  toolCallId: string;
  toolName: string;
  arguments: unknown;
}

/** What the call answers with: what running it would have answered (text the model sees, and the output). */
export interface ToolAnswer {
  isError: boolean;
  content: string;
  output?: unknown;
}

export type ToolAnswers = (question: ToolAnswerQuestion) => ToolAnswer | undefined;

// A global symbol, so two copies of this module in one process (sources and a bundle) share it.
const SLOT = Symbol.for('flue.toolAnswers');
type Slot = { [SLOT]?: ToolAnswers };

export function toolAnswers(): ToolAnswers | undefined {
  return (globalThis as Slot)[SLOT];
}

/** Installs (or with `undefined` removes) the process-wide answers; returns the previous ones. */
export function installToolAnswers(answers: ToolAnswers | undefined): ToolAnswers | undefined {
  const previous = (globalThis as Slot)[SLOT];
  if (answers === undefined) delete (globalThis as Slot)[SLOT];
  else (globalThis as Slot)[SLOT] = answers;
  return previous;
}
