import { createProvider } from '@earendil-works/pi-ai';
import { lazyApi } from '@earendil-works/pi-ai/api/lazy';
import { AssistantMessageEventStream } from '@earendil-works/pi-ai/utils/event-stream';
import { describe, expect, it } from 'vitest';
import type { Provider } from './model-types.ts';
import { withLoadedApi } from './providers.ts';

describe('withLoadedApi', () => {
  const streams: AssistantMessageEventStream[] = [];
  const wire = {
    stream: () => streams[streams.push(new AssistantMessageEventStream()) - 1]!,
    streamSimple: () => streams[streams.push(new AssistantMessageEventStream()) - 1]!,
  };
  let loads = 0;
  const lazy = createProvider({
    id: 'x',
    auth: {},
    models: [
      {
        id: 'm',
        name: 'm',
        api: 'x-wire',
        provider: 'x',
        baseUrl: '',
        reasoning: false,
        input: ['text'],
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        contextWindow: 1,
        maxTokens: 1,
      },
    ],
    api: lazyApi(async () => {
      loads++;
      return wire;
    }),
  }) as unknown as Provider;
  const model = lazy.getModels()[0]!;

  it("returns the module's own stream, with no import and no stream around it", () => {
    const direct = withLoadedApi(lazy, wire);
    const before = streams.length;
    expect(direct.streamSimple(model, { messages: [] })).toBe(streams[before]);
    expect(direct.stream(model, { messages: [] })).toBe(streams[before + 1]);
    expect(loads).toBe(0);
  });

  it('keeps the rest of the provider, and leaves the one it was given as it was', () => {
    const direct = withLoadedApi(lazy, wire);
    expect(direct.id).toBe('x');
    expect(direct.getModels()).toEqual(lazy.getModels());
    expect(direct.auth).toBe(lazy.auth);
    const before = streams.length;
    expect(lazy.streamSimple(model, { messages: [] })).not.toBe(streams[before]);
  });
});
