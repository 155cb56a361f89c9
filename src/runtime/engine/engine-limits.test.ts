/**
 * The limits the engine enforces itself, on their boundary (docs/limits.md): one
 * `usePersistentState` value's 24 MiB in its setter (the limit itself is accepted, one byte past
 * it refused), and no limit on a conversation's log. (The checks every transport shares are in
 * common/limits-boundary.test.ts.)
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import * as v from 'valibot';
import { sqlite } from '../../node/sqlite.ts';
import { scriptedProvider } from '../../testing/scripted-provider.ts';
import { type ScriptedModelServer, startScriptedModelServer } from '../../testing/scripted-model-server.ts';
import { useModel, usePersistentState, useTool } from '../index.ts';
import { AgentRegistry } from '../authoring/identity.ts';
import { PayloadTooLargeError } from '../common/errors.ts';
import { MAX_STATE_VALUE_BYTES, MiB } from '../common/limits.ts';
import { registerProviders } from '../model/providers.ts';
import { SqlStore } from '../store/sql-store.ts';
import { parseDeliveredMessage } from './delivered-message.ts';
import { ConversationEngine } from './engine.ts';
import { conversationKey, storedConversationKey } from '../store/conversation-key.ts';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer();
  registerProviders([scriptedProvider({ baseUrl: server.url, id: 'engine-limits', models: ['model'] })]);
});
afterAll(async () => server.close());

/** Text of exactly `bytes` UTF-8 bytes; two-byte characters first, so characters ≠ bytes. */
function utf8Text(bytes: number): string {
  return 'é'.repeat(4096) + 'x'.repeat(bytes - 8192);
}

function Keeper() {
  useModel('engine-limits/model');
  const [, setBlob] = usePersistentState<string>('blob', '');
  useTool({
    name: 'save',
    description: 'Save a value of the given JSON size.',
    input: v.object({ bytes: v.number() }),
    run: ({ data }) => {
      try {
        // A string's JSON adds its two quotes.
        setBlob(utf8Text(data.bytes - 2));
        return 'saved';
      } catch (error) {
        if (error instanceof PayloadTooLargeError) return { output: { refused: error.meta } };
        throw error;
      }
    },
  });
  return 'Keep.';
}

let store: SqlStore;

let engine: ConversationEngine;

beforeEach(async () => {
  const adapter = sqlite();
  await adapter.migrate();
  store = new SqlStore(await adapter.connect());
  const registry = new AgentRegistry();
  registry.register(Keeper);
  // The test drives the queue itself.
  engine = new ConversationEngine({ store, registry, env: {}, wake: () => {} });
});

describe('a conversation log past 64 MiB', () => {
  it('takes the next message', async () => {
    const { receipt } = await engine.admit('Keeper', { id: 'long', message: parseDeliveredMessage('hi') }, 'dispatch');
    const stream = conversationKey('Keeper', 'long');
    // Filler written straight to the log: 66 MiB, past the cap conversations once had.
    const filler = 'f'.repeat(22 * MiB);
    for (let i = 0; i < 3; i++) {
      const seq = store.append(stream, [
        { type: 'data_write', submissionId: receipt.submissionId, messageId: 'msg_fill', name: 'fill', data: filler },
      ]);
      // Reported as the writer reports its appends, so the engine's fold reads it.
      engine.view.appended(stream, seq);
    }
    const next = await engine.admit('Keeper', { id: 'long', message: parseDeliveredMessage('next') }, 'dispatch');
    expect(next.receipt.submissionId).toMatch(/^sub_/);
    expect(store.openSubmissions(stream).map((row) => row.id)).toEqual([receipt.submissionId, next.receipt.submissionId]);
  });
});

describe('a usePersistentState value of 24 MiB', () => {
  it('is kept at the limit and refused by the setter a byte past it', async () => {
    expect(MAX_STATE_VALUE_BYTES).toBe(24 * MiB);
    server.script(
      {
        toolCalls: [
          { name: 'save', arguments: { bytes: MAX_STATE_VALUE_BYTES } },
          { name: 'save', arguments: { bytes: MAX_STATE_VALUE_BYTES + 1 } },
        ],
      },
      { text: 'Done.' },
    );
    await engine.admit('Keeper', { id: 'keep', message: parseDeliveredMessage('save both') }, 'dispatch');
    await engine.runQueue(storedConversationKey('agents/Keeper/keep'));
    const results = server.requests[1]!.messages.filter((m) => m.role === 'tool').map((m) => m.content);
    expect(results).toEqual([
      '"saved"',
      JSON.stringify({
        refused: { field: 'usePersistentState("blob") value', limit: MAX_STATE_VALUE_BYTES, size: MAX_STATE_VALUE_BYTES + 1 },
      }),
    ]);
    const kept = store.readState(storedConversationKey('agents/Keeper/keep')).get('blob') as string;
    expect(kept.length).toBe(MAX_STATE_VALUE_BYTES - 2 - 4096);
  });
});
