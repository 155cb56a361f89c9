/**
 * The scripted model server speaks Anthropic Messages and OpenAI Completions only, so the
 * Responses and Google mappings are checked here: pi-ai's real request code for each API builds
 * the payload, the document hook rewrites it, and a fetch stand-in records the body it would send.
 */
import { expect, test } from 'vitest';
import { type Api, type Context, type Model, normalizeContext } from '@earendil-works/pi-ai';
import * as azureResponses from '@earendil-works/pi-ai/api/azure-openai-responses';
import * as google from '@earendil-works/pi-ai/api/google-generative-ai';
import * as openaiResponses from '@earendil-works/pi-ai/api/openai-responses';
import { DocumentPlacement } from './documents.ts';

const pdf = Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.from([0x80, 0x81, 0xfe, 0x00]), Buffer.from('\n%%EOF')]).toString('base64');

function model(api: Api, baseUrl: string): Model<Api> {
  return {
    id: 'doc-model',
    name: 'doc-model',
    api,
    provider: 'test',
    baseUrl,
    reasoning: false,
    input: ['text', 'image'],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 100_000,
    maxTokens: 1000,
  } as Model<Api>;
}

async function sentBody(
  streams: { streamSimple: (model: never, context: never, options: never) => { result(): Promise<unknown> } },
  target: Model<Api>,
): Promise<any> {
  const placement = new DocumentPlacement(target);
  const context: Context = {
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Read it.' },
          placement.place('att_1', () => ({ data: pdf, mimeType: 'application/pdf', filename: 'q3.pdf' }), 'q3.pdf'),
        ],
        timestamp: 0,
      },
    ],
  };
  let body: unknown;
  const fetch = async (_input: unknown, init?: RequestInit) => {
    body = JSON.parse(String(init?.body));
    return new Response(JSON.stringify({ error: { message: 'recorded' } }), {
      status: 400,
      headers: { 'content-type': 'application/json' },
    });
  };
  const options = { apiKey: 'test-key', maxRetries: 0, fetch, onPayload: placement.onPayload };
  // As the model registry does before it hands a context to an API.
  await streams.streamSimple(target as never, normalizeContext(context) as never, options as never).result();
  return body;
}

test('OpenAI Responses requests carry the document as an input_file data URL', async () => {
  const body = await sentBody(openaiResponses, model('openai-responses', 'http://127.0.0.1:9/v1'));
  const content = body.input.find((item: { role?: string }) => item.role === 'user').content;
  expect(content).toEqual([
    { type: 'input_text', text: 'Read it.' },
    { type: 'input_file', filename: 'q3.pdf', file_data: `data:application/pdf;base64,${pdf}` },
  ]);
});

test('Azure OpenAI Responses requests carry the same input_file block', async () => {
  const body = await sentBody(azureResponses, model('azure-openai-responses', 'https://example-resource.openai.azure.com/openai/v1'));
  const content = body.input.find((item: { role?: string }) => item.role === 'user').content;
  expect(content[1]).toEqual({ type: 'input_file', filename: 'q3.pdf', file_data: `data:application/pdf;base64,${pdf}` });
});

test('Google Generative AI requests carry the document as inline data', async () => {
  const body = await sentBody(google, model('google-generative-ai', 'http://127.0.0.1:9'));
  expect(body.contents[0].parts).toEqual([{ text: 'Read it.' }, { inlineData: { mimeType: 'application/pdf', data: pdf } }]);
});

test('an API without native documents gets the placeholder and no payload hook', () => {
  const placement = new DocumentPlacement(model('mistral-conversations', 'http://127.0.0.1:9'));
  expect(placement.place('att_1', () => ({ data: pdf, mimeType: 'application/pdf' }), 'q3.pdf')).toEqual({
    type: 'text',
    text: '[document q3.pdf omitted: this model API does not accept documents]',
  });
  expect(placement.onPayload).toBeUndefined();
});
