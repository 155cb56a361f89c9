/**
 * The main job: the example app (examples/cloudflare) on a local Worker through `flue dev`.
 *
 * Without ANTHROPIC_API_KEY a scripted local model plays the assistants (offline): the release
 * manager publishes "publish pkg@1.2.0" (stable versions wait for approval on the page), the order
 * assistant looks up "order <id>", anything else is echoed. With the key set, the real model answers.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startScriptedModelServer } from '@flue/runtime/testing';
import { demoModel } from '../examples/cloudflare/demo-model.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const example = `${root}examples/cloudflare`;
const port = process.env.PORT ?? '8787';

const real = Boolean(process.env.ANTHROPIC_API_KEY);
const server = real ? undefined : await startScriptedModelServer({ fallback: demoModel });
// The key reaches the Worker through wrangler's process-env loading, never on a command line.
const vars = server ? ['--var', `FLUE_SCRIPTED_MODEL_URL:${server.url}`] : [];
// The approval route's credential (examples/cloudflare/src/shared/auth.ts). A fixed, public value
// is fine on loopback; a deployed Worker gets its own with `wrangler secret put OPERATOR_TOKEN`.
const operatorToken = process.env.OPERATOR_TOKEN || 'dev-operator-token';
vars.push('--var', `OPERATOR_TOKEN:${operatorToken}`);
// How long a release request waits for a decision (examples/cloudflare/src/shared/approval-expiry.ts):
// `APPROVAL_EXPIRES_MS=30000 npm run dev` shows a request expiring within a demo.
if (process.env.APPROVAL_EXPIRES_MS) vars.push('--var', `APPROVAL_EXPIRES_MS:${process.env.APPROVAL_EXPIRES_MS}`);

console.error(
  real
    ? 'Model: anthropic/claude-haiku-4-5 (ANTHROPIC_API_KEY is set)'
    : `Model: scripted local model at ${server!.url} (set ANTHROPIC_API_KEY for a real one)`,
);
console.error(
  `Operator token for approvals on the page: ${process.env.OPERATOR_TOKEN ? '(OPERATOR_TOKEN from your environment)' : operatorToken}`,
);
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
