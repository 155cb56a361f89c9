/**
 * Constructors of the agent definition errors the engine raises in several places. Kept out of
 * errors.ts, whose every export is public API, because these helpers are not.
 */
import { AgentDefinitionError } from './errors.ts';

/** A hook misuse; the message keeps the `[flue] …` prose the hook has always thrown. */
export function hookUsageError(message: string): AgentDefinitionError {
  return new AgentDefinitionError('hook_usage', message);
}

/** The seed's exact words for an async agent function or a returned promise. */
const SYNC_AGENT_MESSAGE = '[flue] Agent functions must be synchronous.';

export function asyncAgentError(agent?: string): AgentDefinitionError {
  return new AgentDefinitionError(
    'synchronous',
    `${SYNC_AGENT_MESSAGE} Move async work into tools, event hook callbacks or resource factories.`,
    {
      ...(agent === undefined ? {} : { agent }),
      details:
        `${agent === undefined ? 'The agent function' : `Agent "${agent}"`} is async or returns a promise. An agent function renders ` +
        'synchronously before every model call: drop `async` and await inside a tool run(), useAgentStart() or another callback.',
    },
  );
}
