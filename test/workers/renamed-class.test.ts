/**
 * An agent renamed with a `renamed_classes` migration (cloudflare.md §2): the migration moves each
 * of the old class's objects to the new class, storage and all, and the conversation in it stays
 * keyed by the identity it was born under. Seeded here as such a deploy leaves it: Echo's object
 * holding a conversation born as `Parrot`, whose running attempt the deploy cut off.
 */
import { env, runInDurableObject } from 'cloudflare:test';
import { afterEach, expect, test } from 'vitest';
import { type DispatchReceipt, init } from '@flue/runtime';
import { durableObjectSqlDriver } from '../../src/durable-objects/sql-driver.ts';
import { SqlStore, migrate } from '../../src/runtime/store/sql-store.ts';
import { ECHO_LANE, Echo } from './agents.ts';
import { laneRequests, resetLane, scriptLane } from './lanes.ts';
import { untilAtRest } from './at-rest.ts';
import './worker.ts';
import { objectSubmissions } from './object-store.ts';
import { conversationKey } from '../../src/runtime/store/conversation-key.ts';

const TS = '2026-01-01T00:00:00.000Z';
// A fresh stub per call: a stub that reached the object before its reset stays broken.
const stub = () => (env as unknown as Record<string, DurableObjectNamespace>).FLUE_ECHO_AGENT!.getByName('renamed');

afterEach(() => resetLane(ECHO_LANE));

/** The conversation `agents/Parrot/renamed`: one delivery applied, its attempt claimed and cut off. */
async function seedParrotConversation(): Promise<DispatchReceipt> {
  await runInDurableObject(stub(), (_instance, state) => {
    // The store as the class's earlier identity made it (a new object makes it at its first call).
    const driver = durableObjectSqlDriver(state.storage);
    migrate(driver);
    const store = new SqlStore(driver);
    const stream = conversationKey('Parrot', 'renamed');
    store.transaction(() => {
      store.createConversation({ key: stream, agent: 'Parrot', instanceId: 'renamed', incarnation: 'inc_parrot' });
      store.append(stream, [{ type: 'conversation_created', conversationId: 'conv_parrot', uid: 'inst_parrot', ts: TS }]);
      store.storeSubmission({
        id: 'sub_parrot',
        conversation: stream,
        kind: 'dispatch',
        payload: { message: { kind: 'user', body: 'Remember 42.' } },
        acceptedAt: TS,
      });
      store.claimAttempt('sub_parrot', { attemptId: 'attempt_cut', now: Date.now(), maxAttempts: 10, timeoutMs: 3_600_000 });
      store.append(stream, [
        {
          type: 'user_message',
          messageId: 'msg_in_sub_parrot',
          submissionId: 'sub_parrot',
          deliveryOrigin: 'app',
          body: 'Remember 42.',
          ts: TS,
        },
      ]);
    });
  });
  // The deploy restarted the object: the next call constructs it again.
  await runInDurableObject(stub(), (_instance, state) => {
    try {
      state.abort('deploy');
    } catch {
      // abort() throws in the calling context by design
    }
  }).catch(() => {});
  return { submissionId: 'sub_parrot', acceptedAt: TS, uid: 'inst_parrot' };
}

test('a conversation born under the old identity carries on under the renamed class: its work in flight settles, the next message continues it', async () => {
  await scriptLane(ECHO_LANE, { text: 'Noted: 42.' }, { text: 'You said 42.' });
  const receipt = await seedParrotConversation();
  const echo = init(Echo, { id: 'renamed' });

  expect((await echo.read(receipt)).text).toBe('Noted: 42.');
  const next = await echo.dispatch('What did I say?');
  expect((await echo.read(next)).text).toBe('You said 42.');

  const requests = await laneRequests(ECHO_LANE);
  expect(requests.map((request) => request.messages.map((m) => `${m.role}: ${m.content}`))).toEqual([
    ['user: Remember 42.'],
    ['user: Remember 42.', 'assistant: Noted: 42.', 'user: What did I say?'],
  ]);
  // One conversation, both settled; nothing left to wake for, so no alarm is left once the backstop lapses.
  // The seeded one has its row (the new class claimed its second attempt); the next was admitted in the log.
  const rows = (await objectSubmissions(stub())).map(({ stream, status, outcome, attemptCount }) => ({
    stream,
    status,
    outcome,
    attemptCount,
  }));
  expect(rows).toEqual([
    { stream: 'agents/Parrot/renamed', status: 'settled', outcome: 'completed', attemptCount: 2 },
    { stream: 'agents/Parrot/renamed', status: 'settled', outcome: 'completed', attemptCount: 1 },
  ]);
  await untilAtRest(stub());
});
