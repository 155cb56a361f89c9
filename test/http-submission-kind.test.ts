/**
 * HTTP submissions are kind `'http'` in the code. What was already frozen keeps its old spelling:
 * the ledger stores `'direct'` (a rolled-back version reads its rows), keyed ids hash under
 * `flue-submission-key/http`, attachment ids read `att_direct_…`, and the
 * `submission_queued` / `submission_running` events and the advisory signal of an aborted or failed
 * submission say `kind: 'direct'` (events.md §5).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as v from 'valibot';
import { defineTool, observe, useModel, useTool, type FlueEvent, type PersistenceAdapter } from '@flue/runtime';
import { sqlite } from '@flue/runtime/node';
import { scriptedProvider, startScriptedModelServer, type ScriptedModelServer } from '@flue/runtime/testing';
import { registerProviders } from '../src/runtime/model/providers.ts';
import { engineOn, until } from './support/engine.ts';
import { ConversationEngine } from '../src/runtime/engine/engine.ts';
import { AgentRegistry } from '../src/runtime/authoring/identity.ts';
import { SqlStore } from '../src/runtime/store/sql-store.ts';
import { parseDeliveredMessage } from '../src/runtime/engine/delivered-message.ts';
import type { AdmissionRequest } from '../src/runtime/engine/verbs.ts';
import { storedConversationKey } from '../src/runtime/store/conversation-key.ts';

function Keeper() {
  useModel('anthropic/claude-haiku-4-5');
  return 'Keep.';
}

/** An engine that admits and never runs anything (no wake), as a process that dies right after. */
function admittingEngine(store: SqlStore): ConversationEngine {
  const registry = new AgentRegistry();
  registry.register(Keeper);
  return new ConversationEngine({ store, registry, env: {}, wake: () => undefined });
}

/** A fresh in-memory store, migrated as a host migrates it at start. */
async function openStore(): Promise<{ store: SqlStore; adapter: PersistenceAdapter }> {
  const adapter = sqlite();
  await adapter.migrate();
  return { store: new SqlStore(await adapter.connect()), adapter };
}

/** Records every runtime event until `stop()`. */
function recordEvents(): { events: FlueEvent[]; stop: () => void } {
  const events: FlueEvent[] = [];
  const stop = observe((event) => {
    events.push(event);
  });
  return { events, stop };
}

const posted: AdmissionRequest = {
  id: 'k1',
  idempotencyKey: 'client-key-1',
  message: { kind: 'user', body: 'look', attachments: [{ type: 'image', data: 'AAAA', mimeType: 'image/png' }] },
};

describe("HTTP submissions ('http', formerly 'direct')", () => {
  it('a keyed HTTP submission stored by an earlier version replays onto itself', async () => {
    const { store, adapter } = await openStore();
    const first = admittingEngine(store);
    const original = await first.admit('Keeper', posted, 'http');
    await first.stop();
    expect(store.getSubmission(original.receipt.submissionId)!.payload.attachments!.map((a) => a.id)).toEqual([
      `att_direct_${original.receipt.submissionId}_0`,
    ]);
    // The row as every version stored it: the kind spelled 'direct'.
    expect(store.driver.query(`SELECT kind FROM flue_submissions`)).toEqual([{ kind: 'direct' }]);
    await adapter.migrate();

    const { events, stop } = recordEvents();
    const second = admittingEngine(store);
    const replay = await second.admit('Keeper', posted, 'http');
    stop();
    await second.stop();
    expect(replay.receipt).toMatchObject({ submissionId: original.receipt.submissionId, deduplicated: true });
    expect(store.getSubmission(original.receipt.submissionId)!.kind).toBe('http');
    expect(events.filter((e) => e.type === 'submission_queued').map((e) => e.kind)).toEqual(['direct']);
    await adapter.close();
  });

  it("events name the kinds as the published event type does: 'direct' for HTTP, 'dispatch' for dispatch()", async () => {
    const { store, adapter } = await openStore();
    const { events, stop } = recordEvents();
    const engine = admittingEngine(store);
    await engine.admit('Keeper', { id: 'k2', message: parseDeliveredMessage('from a client') }, 'http');
    await engine.admit('Keeper', { id: 'k3', message: parseDeliveredMessage('from the app') }, 'dispatch');
    stop();
    await engine.stop();
    expect(events.filter((e) => e.type === 'submission_queued').map((e) => [e.instanceId, e.kind])).toEqual([
      ['k2', 'direct'],
      ['k3', 'dispatch'],
    ]);
    await adapter.close();
  });

  describe('running', () => {
    let server: ScriptedModelServer;
    beforeAll(async () => {
      server = await startScriptedModelServer();
      registerProviders([
        scriptedProvider({ baseUrl: server.url, id: 'anthropic', models: ['claude-haiku-4-5'], api: 'anthropic-messages' }),
      ]);
    });
    afterAll(async () => server.close());

    let started = false;
    const wait = defineTool({
      name: 'wait',
      description: 'Waits until aborted.',
      input: v.object({}),
      async run({ signal }) {
        started = true;
        await new Promise((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason)));
      },
    });
    function Waiter() {
      useModel('anthropic/claude-haiku-4-5');
      useTool(wait);
      return 'Wait.';
    }

    it("an aborted HTTP submission's advisory signal names its kind 'direct', its running event too", async () => {
      const { store, adapter } = await openStore();
      const { events, stop } = recordEvents();
      server.script({ toolCalls: [{ name: 'wait', arguments: {} }] });
      const engine = engineOn(store, [Waiter]);
      const { receipt } = await engine.admit('Waiter', { id: 'w1', message: parseDeliveredMessage('wait') }, 'http');
      await until(() => started);
      expect(engine.abort('Waiter', 'w1')).toBe(true);
      const reply = engine.read('Waiter', 'w1', receipt.submissionId);
      await expect(reply).rejects.toThrow();
      stop();
      await engine.stop();
      const records = store.readBatches(storedConversationKey('agents/Waiter/w1'), -1).flatMap((batch) => batch.records);
      const advisory = records.find((record) => record.type === 'signal' && record.signalType === 'submission_aborted');
      expect(advisory).toMatchObject({ attributes: { submissionId: receipt.submissionId, kind: 'direct', reason: 'aborted' } });
      expect(events.filter((e) => e.type === 'submission_running').map((e) => e.kind)).toEqual(['direct']);
      await adapter.close();
    });
  });
});
