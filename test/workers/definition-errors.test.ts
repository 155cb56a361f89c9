/**
 * Definition errors on the Cloudflare host: admission in the agent's Durable Object rejects a
 * broken agent, and the Worker's dispatch() rejects with the same typed class (rebuilt across
 * RPC); a typed settlement error reaches read() as AgentRunError.cause.
 */
import { env } from 'cloudflare:test';
import { expect, test, vi } from 'vitest';
import {
  AgentDefinitionError,
  AgentRunError,
  dispatch,
  getAgentInstance,
  init,
  useModel,
  type Agent,
  type SettlementError,
} from '@flue/runtime';
import { createAgentRouter } from '@flue/runtime/routing';
import { Hasty, Typo, Unruly } from './definition-agents.ts';
import './worker.ts';
import { objectRows } from './object-store.ts';

test('an async agent: dispatch() rejects with AgentDefinitionError carrying the seed text; nothing is stored', async () => {
  const error = await dispatch(Hasty as unknown as Agent, { id: 'h1', message: 'hi' }).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(AgentDefinitionError);
  expect(error).toMatchObject({ type: 'agent_definition_invalid', rule: 'synchronous', meta: { rule: 'synchronous', agent: 'Hasty' } });
  expect((error as Error).message.startsWith('[flue] Agent functions must be synchronous.')).toBe(true);
  expect(await getAgentInstance(Hasty as unknown as Agent, 'h1')).toBeNull();
  const stub = (env as unknown as { FLUE_HASTY_AGENT: DurableObjectNamespace }).FLUE_HASTY_AGENT.getByName('h1');
  const rows = await objectRows(stub, 'SELECT id FROM flue_submissions');
  expect(rows).toEqual([]);
});

test('an async agent over HTTP: 500 with the typed envelope, not internal_error', async () => {
  const router = createAgentRouter(Hasty as unknown as Agent);
  const response = await router.fetch(
    new Request('http://flue.test/h2', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'user', body: 'hi' }),
    }),
  );
  expect(response.status).toBe(500);
  const body = (await response.json()) as { error: { type: string; message: string; ref: string } };
  expect(body.error.type).toBe('agent_definition_invalid');
  expect(body.error.message.startsWith('[flue] Agent functions must be synchronous.')).toBe(true);
  expect(body.error.ref).toMatch(/^err_/);
});

test('a bad durability static rejects the dispatch with the reason', async () => {
  const error = await init(Unruly, { id: 'u1' })
    .dispatch('hi')
    .then(
      () => undefined,
      (caught: unknown) => caught,
    );
  expect(error).toBeInstanceOf(AgentDefinitionError);
  expect((error as Error).message).toBe(
    '[flue] Agent "Unruly" has an invalid durability static: durability has unknown key "maxAttempt" (allowed: maxAttempts, timeoutMs, modelIdleTimeoutMs).',
  );
});

test('an unknown model id settles typed: read() rejects with AgentRunError whose cause names it', async () => {
  const handle = init(Typo, { id: 't1' });
  const receipt = await handle.dispatch('hi');
  const error = await handle.read(receipt).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(AgentRunError);
  const cause = (error as AgentRunError).cause as SettlementError;
  expect(cause.type).toBe('unknown_model');
  expect(cause.message).toMatch(/^\[flue\] Unknown model ID "no-such-lane" for provider "scripted"\./);
  // No FLUE_DEV in this Worker: nothing beyond the typed fields.
  expect(cause.dev).toBeUndefined();
});

/** Exported by no 'use agent' module the entry registers. */
function Stray() {
  useModel('scripted/echo');
}

test("an unregistered agent: the message names the Worker's way to register it, never start()", async () => {
  const error = await init(Stray, { id: 's1' })
    .dispatch('hi')
    .then(
      () => undefined,
      (caught: unknown) => caught,
    );
  expect((error as Error).message).toBe(
    '[flue] Agent function "Stray" is not registered in this app. ' +
      "Export it from a 'use agent' module under src/agents/, so that flue build generates its Durable Object class.",
  );
});

test('outside dev mode, an internal error over HTTP stays redacted: no message, no location', async () => {
  const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
  const response = await createAgentRouter(Stray).fetch(
    new Request('http://flue.test/s2', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'user', body: 'hi' }),
    }),
  );
  expect(response.status).toBe(500);
  const body = (await response.json()) as { error: Record<string, string> };
  expect(body.error).toEqual({
    type: 'internal_error',
    message: 'An internal error occurred.',
    details: expect.any(String),
    ref: expect.stringMatching(/^err_/),
  });
  // The terminal still gets the whole error under the same ref.
  expect(String(logged.mock.calls[0]?.[1])).toContain('createAgentRouter() serves agent "Stray"');
  logged.mockRestore();
});
