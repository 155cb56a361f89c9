/**
 * The agent and the scripted model of the history benchmark, shared by the parent
 * (bench/node/history.ts, which runs the model server), the process that builds a history file
 * (history-build.ts) and the measured process (history-child.ts). No imports, so loading it costs
 * every process the same.
 *
 * Every exchange is: user `question <key> …` → the model calls `lookup({ key })` → the tool returns
 * `{ value: 'value-of-<key> …' }` → the model answers `answer to <key> …`.
 */

export const AGENT_NAME = 'HistoryAgent';
export const INSTANCE_ID = 'long-lived';
export const PROVIDER_ID = 'scripted';
export const MODEL_ID = 'model';
export const SYSTEM_PROMPT = 'You answer questions. Use the lookup tool to find the value of a key, then answer.';
export const TOOL_NAME = 'lookup';
export const TOOL_DESCRIPTION = 'Look up a key and return its value.';

export function question(key: string, padding = ''): string {
  return `question ${key} ${padding}`;
}

export function keyOfQuestion(text: string): string | undefined {
  return /question (\S+)/.exec(text)?.[1];
}

export function toolValue(key: string, padding = ''): string {
  return `value-of-${key} ${padding}`;
}

export function answer(key: string, padding = ''): string {
  return `answer to ${key} ${padding}`;
}

/** The scripted model's reply to a request: the messages after its last question decide it. */
export function scriptedReply(
  messages: readonly { role: string; content: string }[],
): { text: string } | { toolCalls: { name: string; arguments: { key: string } }[] } {
  for (let i = messages.length - 1; i >= 0; i--) {
    const key = messages[i]!.role === 'user' ? keyOfQuestion(messages[i]!.content) : undefined;
    if (key === undefined) continue;
    const answered = messages.slice(i + 1).some((message) => message.role === 'tool');
    return answered ? { text: answer(key) } : { toolCalls: [{ name: TOOL_NAME, arguments: { key } }] };
  }
  return { text: 'scripted model: no question found in the request' };
}
