/**
 * The host contract: one set of cases every host must pass the same way — admission, ordering,
 * joins, settlement, abort and recovery — through the public verbs only. Each host runs them from
 * its own test file with a `ContractHost` (node.test.ts on Node, test/workers/contract.test.ts in
 * workerd), so the Node engine and the Durable Object behind RPC cannot drift apart.
 */
import { afterEach, expect, test } from 'vitest';
import { AgentRunError, dispatch, getAgentInstance, init } from '@flue/runtime';
import type { RecordedRequest, ScriptedResponse } from '@flue/runtime/testing';
import { CONTRACT_LANE, Contract, gate, resetGate } from './agents.ts';

export interface ContractHost {
  /** The scripted model server the host's `scripted` provider calls (scripted over its HTTP lanes). */
  modelUrl: string;
  /**
   * The host dies while the instance's response runs and comes back on the same storage, with
   * nothing left of it but what it stored: Node stops with no grace and starts again; on
   * Cloudflare the object is reset and its next alarm runs.
   */
  restart(instanceId: string): Promise<void>;
}

export async function until<T>(probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out waiting for a condition');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Registers the contract's cases; `host()` is read when a case runs. */
export function hostContract(host: () => ContractHost): void {
  const lane = () => `${host().modelUrl}/__scripted/lanes/${CONTRACT_LANE}`;
  const script = async (...steps: ScriptedResponse[]) => {
    const response = await fetch(lane(), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ steps }),
    });
    if (!response.ok) throw new Error(`scripting the contract lane failed: ${response.status}`);
  };
  const requests = async () => (await (await fetch(`${lane()}/requests`)).json()) as RecordedRequest[];
  /** The `msg-<n>` bodies a model request carries in its user messages, in order. */
  const bodiesSeen = (request: RecordedRequest) =>
    request.messages.filter((message) => message.role === 'user').flatMap((message) => message.content.match(/msg-\d+/g) ?? []);
  const gateReached = (calls: number) => until(() => (gate.started >= calls ? true : undefined));

  afterEach(async () => {
    // Frees a tool a case left waiting (a cut-off run), before the next case resets the gate.
    gate.open = true;
    await fetch(lane(), { method: 'DELETE' });
  });

  test('admission: a receipt per delivery, incarnation conditions, idempotent replays and typed refusals', async () => {
    resetGate();
    await script({ text: 'one' }, { text: 'two' });
    const id = 'contract-admit';
    const first = await dispatch(Contract, { id, message: 'msg-1', uid: null });
    expect(first.submissionId).toMatch(/^sub_/);
    expect(await getAgentInstance(Contract, id)).toEqual({ id, uid: first.uid });
    await expect(dispatch(Contract, { id, message: 'msg-x', uid: null })).rejects.toMatchObject({ type: 'agent_instance_exists' });
    await expect(dispatch(Contract, { id, message: 'msg-x', uid: 'inst_other' })).rejects.toMatchObject({
      type: 'agent_instance_not_found',
    });
    const keyed = await dispatch(Contract, { id, message: 'msg-2', idempotencyKey: 'k1' });
    expect(keyed.deduplicated).toBeUndefined();
    expect(await dispatch(Contract, { id, message: 'msg-2', idempotencyKey: 'k1' })).toMatchObject({
      submissionId: keyed.submissionId,
      uid: first.uid,
      deduplicated: true,
    });
    await expect(dispatch(Contract, { id, message: 'msg-3', idempotencyKey: 'k1' })).rejects.toMatchObject({ type: 'submission_conflict' });
    expect(await getAgentInstance(Contract, 'contract-never')).toBeNull();
    await expect(init(Contract, { id: 'contract-never' }).read('sub_x')).rejects.toMatchObject({ type: 'agent_instance_not_found' });
    const handle = init(Contract, { id });
    await handle.read(first);
    await handle.read(keyed);
    // Refused deliveries stored nothing: the model only ever saw the two admitted ones.
    expect(bodiesSeen((await requests()).at(-1)!)).toEqual(['msg-1', 'msg-2']);
  });

  test('ordering: deliveries to one conversation are applied in acceptance order, and each read gets its own settlement', async () => {
    resetGate();
    await script({ text: 'a' }, { text: 'b' }, { text: 'c' });
    const id = 'contract-order';
    const bodies = ['msg-1', 'msg-2', 'msg-3'];
    const receipts = [];
    for (const message of bodies) receipts.push(await dispatch(Contract, { id, message }));
    const handle = init(Contract, { id });
    const replies = await Promise.all(receipts.map((receipt) => handle.read(receipt)));
    expect(replies.map((reply) => reply.submissionId)).toEqual(receipts.map((receipt) => receipt.submissionId));
    expect(bodiesSeen((await requests()).at(-1)!)).toEqual(bodies);
  });

  test('joins: a delivery admitted while a response runs joins it at the next turn boundary and settles with it', async () => {
    resetGate(1);
    await script({ toolCalls: [{ name: 'gate', arguments: {} }] }, { text: 'Both answered.' });
    const handle = init(Contract, { id: 'contract-join' });
    const first = await handle.dispatch('msg-1');
    await gateReached(1);
    const second = await handle.dispatch('msg-2');
    gate.open = true;
    const [a, b] = await Promise.all([handle.read(first), handle.read(second)]);
    expect([a.text, b.text]).toEqual(['Both answered.', 'Both answered.']);
    expect([a.submissionId, b.submissionId]).toEqual([first.submissionId, second.submissionId]);
    const seen = await requests();
    expect(seen).toHaveLength(2);
    // The joined delivery comes after the tool result of the turn it joined at.
    const contents = seen[1]!.messages.map((message) => message.content);
    expect(contents.findIndex((content) => content.includes('msg-2'))).toBeGreaterThan(
      contents.findIndex((content) => content.includes('passed')),
    );
  });

  test('settlement: a settled reply reads again the same, streams to onEvent, and a failure rejects every read with its outcome', async () => {
    resetGate();
    await script({ text: ['Hel', 'lo.'] }, { status: 400, errorBody: 'bad request' });
    const handle = init(Contract, { id: 'contract-settle' });
    const ok = await handle.dispatch('msg-1');
    const chunks: string[] = [];
    const reply = await handle.read(ok, { onEvent: (chunk) => chunks.push(chunk.type) });
    expect(reply.text).toBe('Hello.');
    expect(chunks).toContain('message-delta');
    expect(chunks.at(-1)).toBe('submission-settled');
    expect(await handle.read(ok)).toEqual(reply);
    const failed = await handle.dispatch('msg-2');
    const error = await handle.read(failed).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AgentRunError);
    expect(error).toMatchObject({ outcome: 'failed', submissionId: failed.submissionId });
    await expect(handle.read(failed)).rejects.toMatchObject({ outcome: 'failed' });
  });

  test('abort: the running and the queued submissions settle as aborted, and the conversation takes new work after', async () => {
    resetGate(1);
    await script({ toolCalls: [{ name: 'gate', arguments: {} }] }, { text: 'Fresh start.' });
    const handle = init(Contract, { id: 'contract-abort' });
    const running = await handle.dispatch('msg-1');
    await gateReached(1);
    const queued = await handle.dispatch('msg-2');
    await handle.abort();
    await expect(handle.read(running)).rejects.toMatchObject({ outcome: 'aborted', submissionId: running.submissionId });
    await expect(handle.read(queued)).rejects.toMatchObject({ outcome: 'aborted', submissionId: queued.submissionId });
    gate.open = true;
    const next = await handle.dispatch('msg-3');
    expect((await handle.read(next)).text).toBe('Fresh start.');
    // The queued delivery was aborted before it was applied: the model never saw it.
    expect(bodiesSeen((await requests()).at(-1)!)).toEqual(['msg-1', 'msg-3']);
  });

  test('recovery: a response cut off by the host dying continues from its storage and settles once', async () => {
    resetGate(1);
    await script({ toolCalls: [{ name: 'gate', arguments: {} }] }, { text: 'Recovered.' });
    const id = 'contract-recover';
    const receipt = await dispatch(Contract, { id, message: 'msg-1' });
    await gateReached(1);
    await host().restart(id);
    const reply = await init(Contract, { id }).read(receipt);
    expect(reply.text).toBe('Recovered.');
    // The model step before the cut was not repeated, and the tool call it cut off is not run
    // again: the model is told it was interrupted.
    const seen = await requests();
    expect(seen).toHaveLength(2);
    expect(gate.started).toBe(1);
    expect(seen[1]!.messages.filter((message) => message.role === 'tool').map((message) => message.content)).toEqual([
      expect.stringContaining('interrupted'),
    ]);
    expect(await init(Contract, { id }).read(receipt)).toEqual(reply);
  });
}
