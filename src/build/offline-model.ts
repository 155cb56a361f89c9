/**
 * The offline model of `flue dev` (both targets) and `flue run` when no provider key is set:
 * a pure function from the recorded model request to the scripted reply, served by the scripted
 * model server of `@flue/runtime/testing`.
 *
 * It echoes, except for one message form that lets a user watch their own tools run without a
 * key: `/tool <tool_name> <JSON object of arguments>` makes it call that tool of the agent, and
 * when the tool result comes back it reports it. The tools are the ones the request offers, so
 * whatever the agent declares (its own, a skill's, a subagent's) can be called by name.
 */
import type { RecordedRequest, ScriptedResponse } from '../testing/index.ts';

/** The message form, as the notices and `--help` spell it. */
export const TOOL_FORM = '/tool <tool_name> {"argument":"value"}';

const PREFIX = '(scripted model)';

export function offlineModel(request: RecordedRequest): ScriptedResponse {
  const last = request.messages.at(-1);
  if (last?.role === 'tool') {
    return { text: `${PREFIX} ${toolNameOf(request, last.toolCallId)} returned: ${last.content}` };
  }
  const said = last?.content ?? '';
  const command = /^\s*\/tool(?:\s+(\S+))?(?:\s+([\s\S]*?))?\s*$/.exec(said);
  if (command === null) return { text: `${PREFIX} You said: ${said}` };

  const [, name, argumentText = ''] = command;
  const names = request.tools.map((tool) => tool.name);
  const owned = names.length === 0 ? 'This agent has no tools.' : `This agent's tools: ${names.join(', ')}.`;
  if (name === undefined) return { text: `${PREFIX} To call a tool, send: ${TOOL_FORM} (the arguments are optional). ${owned}` };
  if (!names.includes(name)) return { text: `${PREFIX} This agent has no tool named "${name}". ${owned}` };

  const args = parseArguments(argumentText);
  if (args === undefined) {
    return {
      text: `${PREFIX} The arguments of /tool ${name} must be one JSON object, e.g. /tool ${name} {"argument":"value"}, or nothing for {}; got: ${argumentText}`,
    };
  }
  return { toolCalls: [{ name, arguments: args }] };
}

/** `{}` for no text; undefined when the text is not exactly one JSON object. */
function parseArguments(text: string): Record<string, unknown> | undefined {
  if (text === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** The name of the call a tool result answers, from the assistant turn that made it. */
function toolNameOf(request: RecordedRequest, toolCallId: string | undefined): string {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const call = request.messages[i]!.toolCalls?.find((candidate) => candidate.id === toolCallId);
    if (call !== undefined) return call.name;
  }
  return 'The tool';
}
