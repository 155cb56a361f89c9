import { describe, expect, it } from 'vitest';
import type { RecordedMessage, RecordedRequest } from '../testing/index.ts';
import { offlineModel } from './offline-model.ts';

const TOOLS = [
  { name: 'current_time', description: 'The time.', parameters: { type: 'object' } },
  { name: 'add', description: 'Adds.', parameters: { type: 'object' } },
];

function request(messages: RecordedMessage[], tools = TOOLS): RecordedRequest {
  return { api: 'anthropic-messages', receivedAt: 0, path: '/v1/messages', body: {}, system: 'You help.', tools, messages, headers: {} };
}

const user = (content: string): RecordedMessage[] => [{ role: 'user', content }];

describe('the offline model', () => {
  it('echoes any other message', () => {
    expect(offlineModel(request(user('Hi! What time is it?')))).toEqual({ text: '(scripted model) You said: Hi! What time is it?' });
    // Only a leading `/tool` word is the form.
    expect(offlineModel(request(user('/tools please')))).toEqual({ text: '(scripted model) You said: /tools please' });
    expect(offlineModel(request(user('use /tool add')))).toEqual({ text: '(scripted model) You said: use /tool add' });
  });

  it('calls the named tool with the JSON object of arguments, or {} without one', () => {
    expect(offlineModel(request(user('/tool current_time {"timeZone":"Asia/Tokyo"}')))).toEqual({
      toolCalls: [{ name: 'current_time', arguments: { timeZone: 'Asia/Tokyo' } }],
    });
    expect(offlineModel(request(user('  /tool current_time  \n')))).toEqual({ toolCalls: [{ name: 'current_time', arguments: {} }] });
    expect(offlineModel(request(user('/tool add {\n  "a": 2,\n  "b": 3\n}')))).toEqual({
      toolCalls: [{ name: 'add', arguments: { a: 2, b: 3 } }],
    });
  });

  it('answers with what the tool returned once the result comes back, naming the tool', () => {
    const messages: RecordedMessage[] = [
      ...user('/tool add {"a":2,"b":3}'),
      { role: 'assistant', content: '', toolCalls: [{ id: 'call_7', name: 'add', arguments: { a: 2, b: 3 } }] },
      { role: 'tool', content: '{"sum":5}', toolCallId: 'call_7' },
    ];
    expect(offlineModel(request(messages))).toEqual({ text: '(scripted model) add returned: {"sum":5}' });
  });

  it('names the tools the agent has when it has no tool of that name, or when no name is given', () => {
    expect(offlineModel(request(user('/tool clock')))).toEqual({
      text: '(scripted model) This agent has no tool named "clock". This agent\'s tools: current_time, add.',
    });
    expect(offlineModel(request(user('/tool clock'), []))).toEqual({
      text: '(scripted model) This agent has no tool named "clock". This agent has no tools.',
    });
    expect(offlineModel(request(user('/tool')))).toEqual({
      text: '(scripted model) To call a tool, send: /tool <tool_name> {"argument":"value"} (the arguments are optional). This agent\'s tools: current_time, add.',
    });
  });

  it('says which form it expects when the arguments are not one JSON object', () => {
    for (const bad of ['timeZone=UTC', '[1,2]', '"UTC"', '{"a":1} {"b":2}', 'null']) {
      expect(offlineModel(request(user(`/tool current_time ${bad}`)))).toEqual({
        text: `(scripted model) The arguments of /tool current_time must be one JSON object, e.g. /tool current_time {"argument":"value"}, or nothing for {}; got: ${bad}`,
      });
    }
  });
});
