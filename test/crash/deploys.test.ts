/**
 * A deploy between a crash and its recovery, on Node (durability.md §6.5): a process running
 * DeployAgent's code is SIGKILLed while its durable `fulfil` call blocks in the `ship` step (its
 * `reserve` and `charge` steps recorded), and a NEW process on the same file runs the code after
 * the deploy (`FLUE_CRASH_DEPLOY`, see fixtures/agents.ts) and recovers. The outcome is read
 * through `read()` on the receipt the first process printed.
 */
import { describe, expect, it } from 'vitest';
import { inspectDb, poll, sideEvents, streamOf } from './harness.ts';
import { INTERRUPTED_MARKER, type CrashSuite, expectSettledExactlyOnce, messageOf, pidOf, replyOf, useCrashSuite } from './suite.ts';

const t = useCrashSuite();
const stream = streamOf('DeployAgent', 'deploy');

/** Runs the old code until `fulfil` blocks in `ship`, kills it; answers the receipt and the dead pid. */
async function crashInShip(suite: CrashSuite, reply: string) {
  suite.server.script(
    { toolCalls: [{ id: 'call_fulfil', name: 'fulfil', arguments: { order: 'o1' } }] },
    { text: reply },
    { text: 'spare step (unexpected extra model call)' },
  );
  const old = suite.child(
    { agent: 'DeployAgent', id: 'deploy', dispatch: ['Fulfil order o1.'], then: 'hold' },
    { FLUE_CRASH_BLOCK: 'ship' },
  );
  const receipt = (await old.waitFor('receipt')).receipt;
  await poll('the ship step to start', () => sideEvents(suite.s.side).some((e) => e.step === 'ship'));
  await old.kill();
  return { receipt, pid: old.pid };
}

/** Recovers on the code after `deploy`; answers what the model saw as the call's result, and the new pid. */
async function recoverAfter(suite: CrashSuite, deploy: string, receipt: Awaited<ReturnType<typeof crashInShip>>['receipt'], reply: string) {
  const lines = await suite.runToEnd({ agent: 'DeployAgent', id: 'deploy', read: [receipt] }, { FLUE_CRASH_DEPLOY: deploy });
  expect(replyOf(lines, receipt.submissionId)).toBe(reply);
  const view = inspectDb(suite.s.db, stream);
  expectSettledExactlyOnce(view, [receipt.submissionId]);
  // The change cost no attempt of its own: one dead, one recovered.
  expect(view.submissions[0]).toMatchObject({ attemptCount: 2 });
  expect(suite.server.requests.length).toBe(2);
  const retry = suite.server.requests[1]!;
  return {
    retry,
    result: messageOf(retry, (m) => m.role === 'tool' && m.toolCallId === 'call_fulfil', 'the fulfil result'),
    pid: pidOf(lines),
  };
}

const stepsRun = (side: string) => sideEvents(side).map((e) => [e.step, e.pid]);

describe('a deploy between a crash and its recovery, on Node', () => {
  it('changed steps: recorded steps replay, a renamed or new step runs, the call completes', async () => {
    const { receipt, pid: old } = await crashInShip(t, 'Fulfilled o1.');
    const { result, pid } = await recoverAfter(t, 'steps', receipt, 'Fulfilled o1.');
    expect(JSON.parse(result.content)).toEqual([`reserve-o1-${old}`, `bill-o1-${pid}`, `ship-o1-${pid}`, `notify-o1-${pid}`]);
    expect(result.isError).toBe(false);
    expect(stepsRun(t.s.side)).toEqual([
      ['reserve', old],
      ['charge', old],
      ['ship', old],
      ['bill', pid],
      ['ship', pid],
      ['notify', pid],
    ]);
  });

  it('a changed input schema: the recorded arguments fail validation as a tool error the model sees; no step runs', async () => {
    const { receipt } = await crashInShip(t, 'I need a priority for o1.');
    const { result } = await recoverAfter(t, 'schema', receipt, 'I need a priority for o1.');
    expect(result).toMatchObject({ isError: true });
    expect(result.content).toMatch(
      /^Arguments for tool "fulfil" do not match the required schema: .*priority.* Call the tool again with corrected arguments\.$/,
    );
    expect(stepsRun(t.s.side).map(([step]) => step)).toEqual(['reserve', 'charge', 'ship']);
  });

  it('a renamed tool: the pending call gets the interrupted marker and the model is offered the new name', async () => {
    const { receipt } = await crashInShip(t, 'Please ask again.');
    const { retry, result } = await recoverAfter(t, 'tool', receipt, 'Please ask again.');
    expect(result).toMatchObject({ content: INTERRUPTED_MARKER, isError: true });
    expect(retry.tools.map((tool) => tool.name)).toEqual(['task', 'fulfill']);
    expect(stepsRun(t.s.side).map(([step]) => step)).toEqual(['reserve', 'charge', 'ship']);
  });

  it('the agent function renamed with its agentName kept, on another model: the call resumes and the reply comes from the new model', async () => {
    const { receipt, pid: old } = await crashInShip(t, 'Fulfilled o1 on the new model.');
    const { retry, result, pid } = await recoverAfter(t, 'agent,model', receipt, 'Fulfilled o1 on the new model.');
    expect(JSON.parse(result.content)).toEqual([`reserve-o1-${old}`, `charge-o1-${old}`, `ship-o1-${pid}`]);
    expect(t.server.requests[0]!.body.model).toBe('claude-haiku-4-5');
    expect(retry.body.model).toBe('claude-sonnet-4-5');
  });
});
