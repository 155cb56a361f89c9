'use agent';
/**
 * An agent is an exported function whose name starts with an uppercase letter, in a module that
 * begins with 'use agent'. `flue build` turns it into its own Durable Object class
 * (FlueHelloAgent), which is why wrangler.jsonc has a migration for that class.
 */
import * as v from 'valibot';
import { defineTool, useModel, useTool } from '@flue/runtime';

const currentTime = defineTool({
  name: 'current_time',
  description: 'Returns the current date and time, in UTC or in the given IANA time zone.',
  input: v.object({ timeZone: v.optional(v.string()) }),
  async run({ data }) {
    const timeZone = data.timeZone ?? 'UTC';
    return { output: { timeZone, now: new Date().toLocaleString('en-US', { timeZone }) } };
  },
});

export function Hello() {
  useModel('anthropic/claude-haiku-4-5');
  useTool(currentTime);
  return 'You are a friendly assistant. Keep answers short. Use current_time when asked about the date or time.';
}
