/**
 * The main job: the example app (examples/cloudflare) on a local Worker through `flue dev`.
 *
 * Without ANTHROPIC_API_KEY a scripted local model plays the assistant (offline): it looks up any
 * "order <id>" it is asked about and otherwise echoes. With the key set, the real model answers.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startScriptedModelServer, type ScriptedResponse } from '@flue/runtime/testing';

const root = fileURLToPath(new URL('..', import.meta.url));
const example = `${root}examples/cloudflare`;
const port = process.env.PORT ?? '8787';

function demoModel(request: { messages: { role: string; content: string }[] }): ScriptedResponse {
  const last = request.messages.at(-1);
  if (last?.role === 'tool') return { text: `Here is what I found: ${last.content}` };
  const order = /order\s*#?\s*(\w+)/i.exec(last?.content ?? '');
  if (order) return { text: 'Let me look that up.', toolCalls: [{ name: 'lookup_order', arguments: { orderId: order[1]! } }] };
  return { text: `(scripted model) You said: ${last?.content ?? ''}` };
}

const real = Boolean(process.env.ANTHROPIC_API_KEY);
const server = real ? undefined : await startScriptedModelServer({ fallback: demoModel });
// The key reaches the Worker through wrangler's process-env loading, never on a command line.
const vars = server ? ['--var', `FLUE_SCRIPTED_MODEL_URL:${server.url}`] : [];

console.error(real ? 'Model: anthropic/claude-haiku-4-5 (ANTHROPIC_API_KEY is set)' : `Model: scripted local model at ${server!.url} (set ANTHROPIC_API_KEY for a real one)`);
const child = spawn(process.execPath, [`${root}bin/flue.js`, 'dev', '--port', port, '--', ...vars], {
  cwd: example,
  stdio: 'inherit',
  env: real ? { ...process.env, CLOUDFLARE_INCLUDE_PROCESS_ENV: 'true' } : process.env,
});
const stop = () => child.kill('SIGINT');
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
child.on('exit', async (code) => {
  await server?.close();
  process.exit(code ?? 0);
});
