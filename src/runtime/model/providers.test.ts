import { createProvider } from '@earendil-works/pi-ai';
import { lazyApi } from '@earendil-works/pi-ai/api/lazy';
import { AssistantMessageEventStream } from '@earendil-works/pi-ai/utils/event-stream';
import { describe, expect, it } from 'vitest';
import type { Provider } from './model-types.ts';
import { withApiOnLoad, withLoadedApi } from './providers.ts';

const streams: AssistantMessageEventStream[] = [];

describe('withLoadedApi', () => {
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

describe('withApiOnLoad', () => {
  const wire = {
    stream: () => streams[streams.push(new AssistantMessageEventStream()) - 1]!,
    streamSimple: () => streams[streams.push(new AssistantMessageEventStream()) - 1]!,
  };
  const own = { stream: 0, streamSimple: 0 };
  const provider = {
    id: 'y',
    getModels: () => [],
    stream: () => (own.stream++, new AssistantMessageEventStream()),
    streamSimple: () => (own.streamSimple++, new AssistantMessageEventStream()),
  } as unknown as Provider;
  const model = {} as Parameters<Provider['stream']>[0];

  it('goes through the provider until the module is loaded, then calls the module; it loads it once', async () => {
    let loads = 0;
    let loaded!: (api: typeof wire) => void;
    const direct = withApiOnLoad(provider, () => {
      loads++;
      return new Promise((resolve) => (loaded = resolve));
    });
    own.streamSimple = 0;
    direct.streamSimple(model, { messages: [] });
    direct.streamSimple(model, { messages: [] });
    expect(own.streamSimple).toBe(2);
    loaded(wire);
    await Promise.resolve();
    const before = streams.length;
    expect(direct.streamSimple(model, { messages: [] })).toBe(streams[before]);
    expect(direct.stream(model, { messages: [] })).toBe(streams[before + 1]);
    expect(own.streamSimple).toBe(2);
    expect(loads).toBe(1);
    expect(direct.id).toBe('y');
  });

  it('stays on the provider when the module fails to load', async () => {
    const direct = withApiOnLoad(provider, () => Promise.reject(new Error('no such module')));
    own.stream = 0;
    direct.stream(model, { messages: [] });
    await new Promise((resolve) => setTimeout(resolve, 0));
    direct.stream(model, { messages: [] });
    expect(own.stream).toBe(2);
  });
});
