/** The agent the Workers AI binding tests dispatch to: a `cloudflare/...` model and one tool. */
import * as v from 'valibot';
import { defineTool, useModel, useTool } from '@flue/runtime';

export const LLAMA = '@cf/meta/llama-3.3-70b-instruct-fp8-fast';
export const GPT_OSS = '@cf/openai/gpt-oss-120b';

const forecast = defineTool({
  name: 'forecast',
  description: 'The weather forecast for a city.',
  input: v.object({ city: v.string() }),
  async run({ data }) {
    return { output: { city: data.city, sky: 'sunny' } };
  },
});

/** Instances whose id starts with `oai-` use an OpenAI-compatible model. */
export function Forecaster(props: { id: string }) {
  useModel(`cloudflare/${props.id.startsWith('oai-') ? GPT_OSS : LLAMA}`);
  useTool(forecast);
  return 'You report the weather.';
}
