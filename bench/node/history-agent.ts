/**
 * The agent of the history benchmark (bench/node/history.ts), as the process that builds a history
 * file and the measured process both run it: one scripted model, one `lookup` tool.
 */
import { defineTool, useModel, useTool } from '@flue/runtime';
import { scriptedProvider } from '@flue/runtime/testing';
import * as v from 'valibot';
// The scripted provider loads its wire format's client when it is made, in the background: loaded
// here, before anything is measured, so a wake's figures hold the wake and not module loading.
import '@earendil-works/pi-ai/api/openai-completions';
import { MODEL_ID, PROVIDER_ID, SYSTEM_PROMPT, TOOL_DESCRIPTION, TOOL_NAME, toolValue } from './history-script.ts';

const lookup = defineTool({
  name: TOOL_NAME,
  description: TOOL_DESCRIPTION,
  input: v.object({ key: v.string() }),
  async run({ data }) {
    return { output: { value: toolValue(data.key) } };
  },
});

export function HistoryAgent(): string {
  useModel(`${PROVIDER_ID}/${MODEL_ID}`);
  useTool(lookup);
  return SYSTEM_PROMPT;
}

export function historyProvider(baseUrl: string) {
  return scriptedProvider({ baseUrl, id: PROVIDER_ID, models: [MODEL_ID], api: 'openai-completions' });
}
