/**
 * System-prompt text the runtime always adds. `task` is always offered, so every system prompt
 * ends with the `## Available Agents` section; without declared subagents it says so.
 */
export const NO_AGENTS_SECTION = '## Available Agents\nNo subagents are declared for this agent. Do not call the `task` tool.';

/** The system prompt of an agent with these instructions and no skills or subagents. */
export function promptOf(instructions: string): string {
  return `${instructions}\n\n${NO_AGENTS_SECTION}`;
}
