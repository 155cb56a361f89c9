/**
 * Regression: durable step memos are scoped to the model step that issued the call, not only to
 * the tool-call id. Some OpenAI-compatible servers number calls per response (`call_0`), so a
 * later call reusing an id must run its own steps instead of replaying the earlier call's values.
 */
import { describe, expect, it } from 'vitest';
import { sideEvents } from './harness.ts';
import { useCrashSuite } from './suite.ts';

const t = useCrashSuite();

describe('durable step memo scope', () => {
  it('a later call that reuses a tool-call id runs its own steps', async () => {
    const { server, s } = t;
    server.script(
      { toolCalls: [{ id: 'call_0', name: 'provision', arguments: { order: 'A' } }] },
      { text: 'Provisioned A.' },
      { toolCalls: [{ id: 'call_0', name: 'provision', arguments: { order: 'B' } }] },
      { text: 'Provisioned B.' },
    );
    await t.runToEnd({ agent: 'ProvisionAgent', id: 'reused-ids', converse: ['Provision A.', 'Provision B.'] });
    const results = server.requests[3]!.messages.filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content) as { shipment: string });
    expect(results.map((r) => r.shipment.split('-')[1])).toEqual(['A', 'B']);
    expect(sideEvents(s.side).filter((e) => e.step === 'ship')).toHaveLength(2);
  });
});
