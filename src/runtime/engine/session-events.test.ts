import { describe, expect, it } from 'vitest';
import type { AssistantMessage } from '@earendil-works/pi-ai';
import { IMAGE_DATA_OMITTED, observe, observed, omitImageData } from '../common/events.ts';
import { toolEvent, toolResultMessage, turnMessages } from './session-events.ts';

const outcome = { toolCallId: 'call_1', toolName: 'lookup', isError: false, content: '{"a":1}', output: { a: 1 }, durationMs: 4 };

describe('session event payloads', () => {
  it('a tool outcome becomes its tool-result message and terminal tool event, with the same toolCallId', () => {
    expect(toolResultMessage(outcome)).toEqual({
      role: 'toolResult',
      toolCallId: 'call_1',
      toolName: 'lookup',
      content: [{ type: 'text', text: '{"a":1}' }],
      isError: false,
    });
    expect(toolEvent(outcome)).toMatchObject({ toolCallId: 'call_1', isError: false, durationMs: 4, effectiveResult: { a: 1 } });
    expect(toolEvent({ ...outcome, isError: true, output: undefined })).not.toHaveProperty('effectiveResult');
  });

  it('the turn boundary carries the assistant message without image bytes, and its tool results', () => {
    const message = { role: 'assistant', content: [{ type: 'image', data: 'AAAA', mimeType: 'image/png' }] } as unknown as AssistantMessage;
    const boundary = turnMessages('msg_1', message, [outcome]);
    expect(boundary).toMatchObject({ turnId: 'msg_1', purpose: 'agent', toolResults: [{ toolCallId: 'call_1' }] });
    expect(boundary.message).toEqual({ role: 'assistant', content: [{ type: 'image', data: IMAGE_DATA_OMITTED, mimeType: 'image/png' }] });
    expect(omitImageData([{ type: 'text', text: 'x' }])).toEqual([{ type: 'text', text: 'x' }]);
  });

  it('observed() is false until someone subscribes: emitters build no payload for nobody', () => {
    expect(observed()).toBe(false);
    const stop = observe(() => {});
    expect(observed()).toBe(true);
    stop();
    expect(observed()).toBe(false);
  });
});
