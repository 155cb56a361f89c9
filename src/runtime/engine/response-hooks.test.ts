import { describe, expect, it } from 'vitest';
import { LiveConversation } from './conversation-view.ts';
import { type HookSeam, runAgentFinish, runAgentStart, runResponseFinish, runResponseStart } from './response-hooks.ts';
import { ResponseSite } from './response-site.ts';
import type { RenderResult } from '../authoring/render.ts';
import { type ResponseInfo, emptyResponse } from './conversation.ts';
import type { FlueHarness } from '../common/types.ts';
import { storedConversationKey } from '../store/conversation-key.ts';

const site = new ResponseSite({
  live: new LiveConversation(storedConversationKey('stream_1'), 'Worker', 'w1'),
  submissionId: 'sub_1',
  env: {},
  probed: {} as never,
});
const seam: HookSeam = {
  signal: new AbortController().signal,
  site,
  harness: () => ({}) as FlueHarness,
};
const response = (finishCycles = 0): ResponseInfo => ({ ...emptyResponse(), steps: 1, finishCycles });
const append = (body: string) => ({ kind: 'signal' as const, type: 'note', body });

describe('runResponseStart', () => {
  it('merges what the callbacks return, in order, each seeing the merge so far; nothing returned is no metadata', () => {
    const seen: unknown[] = [];
    const hooks: RenderResult['responseStart'] = [
      () => ({ a: 1, nested: { x: 1 } }),
      ({ metadata }) => {
        seen.push(metadata);
        return { nested: { y: 2 } };
      },
    ];
    expect(runResponseStart(hooks, site)).toEqual({ a: 1, nested: { x: 1, y: 2 } });
    expect(seen).toEqual([{ a: 1, nested: { x: 1 } }]);
    expect(runResponseStart([() => undefined], site)).toBeUndefined();
  });
});

describe('runResponseFinish', () => {
  it('returns a response_metadata record of what the callbacks contributed only', () => {
    const record = runResponseFinish({
      hooks: [({ metadata }) => ({ seen: metadata.started })],
      submissionId: 'sub_1',
      response: response(),
      messageId: 'msg_1',
      metadata: { started: true },
      site,
    });
    expect(record).toEqual({ type: 'response_metadata', submissionId: 'sub_1', messageId: 'msg_1', metadata: { seen: true } });
    expect(
      runResponseFinish({
        hooks: [() => undefined],
        submissionId: 'sub_1',
        response: response(),
        messageId: 'msg_1',
        metadata: undefined,
        site,
      }),
    ).toBeUndefined();
  });
});

describe('runAgentStart', () => {
  it('returns the appended signals in declaration order, then the marker; nothing at all without callbacks or state', async () => {
    const hooks: RenderResult['agentStart'] = [
      async ({ append: add }) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        add(append('first'));
      },
      ({ append: add }) => add(append('second')),
    ];
    const records = await runAgentStart({ hooks, submissionId: 'sub_2', hasPendingState: () => false, seam });
    expect(records.map((record) => (record.type === 'signal' ? record.body : record.type))).toEqual(['first', 'second', 'agent_start_run']);
    expect(records[0]).toMatchObject({ submissionId: 'sub_2', origin: 'append' });
    expect(await runAgentStart({ hooks: [], submissionId: 'sub_2', hasPendingState: () => false, seam })).toEqual([]);
    expect(await runAgentStart({ hooks: [], submissionId: 'sub_2', hasPendingState: () => true, seam })).toEqual([
      { type: 'agent_start_run', submissionId: 'sub_2' },
    ]);
  });
});

describe('runAgentFinish', () => {
  it('continues the response when a callback appends, and records a cycle without appends only to carry state writes', async () => {
    const appending = await runAgentFinish({
      hooks: [({ append: add }) => add(append('again'))],
      submissionId: 'sub_1',
      response: response(),
      hasPendingState: () => false,
      seam,
    });
    expect(appending.continues).toBe(true);
    expect(appending.records.map((record) => record.type)).toEqual(['signal', 'agent_finish_cycle']);
    const quiet = [() => {}];
    expect(await runAgentFinish({ hooks: quiet, submissionId: 'sub_1', response: response(), hasPendingState: () => false, seam })).toEqual(
      { continues: false, records: [] },
    );
    expect(await runAgentFinish({ hooks: quiet, submissionId: 'sub_1', response: response(), hasPendingState: () => true, seam })).toEqual({
      continues: false,
      records: [{ type: 'agent_finish_cycle', submissionId: 'sub_1' }],
    });
  });

  it('refuses a continuation past the ceiling of cycles per response', async () => {
    await expect(
      runAgentFinish({
        hooks: [({ append: add }) => add(append('again'))],
        submissionId: 'sub_1',
        response: response(32),
        hasPendingState: () => false,
        seam,
      }),
    ).rejects.toThrow(/more than 32 times/);
  });
});
