/**
 * Render rules at unit level, through `render()` directly (seed 004 "智能体函数" rules;
 * agents-and-hooks.md §1, §5, §6, §8): the sync rule, return type, instruction composition,
 * no re-entrant renders, duplicate names, call-site rules for hooks and their effects, useModel
 * and useDataWriter rules, frame cleanup, bare-render props.
 */
import { describe, expect, it, vi } from 'vitest';
import * as v from 'valibot';
import {
  FlueError,
  ToolNameConflictError,
  defineTool,
  useAgentFinish,
  useAgentStart,
  useDataWriter,
  useDelivery,
  useDispatchMessage,
  useInitialData,
  useInstruction,
  useModel,
  usePersistentState,
  useResponseFinish,
  useResponseStart,
  useTool,
} from '@flue/runtime';
import { type RenderScope, render } from '../../src/runtime/authoring/render.ts';
import { expectFlueError, thrown } from './helpers.ts';

const SYNC = /^\[flue\] Agent functions must be synchronous\./;
const RETURN = /^\[flue\] An agent returns its instruction string \(or nothing\)\./;
const REENTRANT = /^\[flue\] Re-entrant agent render\./;

function stubScope(overrides: Partial<RenderScope> = {}): RenderScope {
  return {
    instanceId: 'inst-1',
    delivery: { kind: 'user', body: 'hello' },
    initialData: undefined,
    readState: () => ({ found: false }),
    setState: vi.fn(),
    writeData: vi.fn(),
    dispatch: vi.fn(async () => ({ submissionId: 'sub_x', acceptedAt: new Date().toISOString(), uid: 'inst_x' })),
    ...overrides,
  };
}

const tool = (name: string) => defineTool({ name, description: `The ${name} tool.`, run: () => 'ok' });

describe('the function contract', () => {
  it('an async agent function throws the sync rule', () => {
    async function AsyncAgent() {
      useModel('anthropic/claude-haiku-4-5');
      return 'instructions';
    }
    const error = thrown(() => render(AsyncAgent as never));
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(SYNC);
  });

  it('any thenable return throws the sync rule', () => {
    expect(() => render((() => Promise.resolve('x')) as never)).toThrow(SYNC);
    expect(() => render((() => ({ then() {} })) as never)).toThrow(SYNC);
  });

  it.each<[string, unknown]>([
    ['a number', 42],
    ['null', null],
    ['an object', { text: 'x' }],
    ['an array', ['x']],
    ['a boolean', true],
  ])('returning %s throws', (_label, value) => {
    expect(() => render((() => value) as never)).toThrow(RETURN);
  });

  it('a string, undefined or no return at all is legal', () => {
    expect(render(() => 'doc').instructions).toBe('doc');
    expect(render(() => undefined).instructions).toBeUndefined();
    expect(
      render(() => {
        useTool(tool('only_tool'));
      }).tools.map((t) => t.name),
    ).toEqual(['only_tool']);
  });

  it("composes 'A' + useInstruction('B') + useInstruction('C') into 'A\\n\\nB\\n\\nC'", () => {
    const result = render(() => {
      useInstruction('B');
      useInstruction('C');
      return 'A';
    });
    expect(result.instructions).toBe('A\n\nB\n\nC');
  });

  it('keeps call order through custom hooks, adds no formatting, drops an empty returned string', () => {
    const useExtra = (text: string) => useInstruction(text);
    expect(
      render(() => {
        useExtra('first line\n');
        useInstruction('  second  ');
        return '';
      }).instructions,
    ).toBe('first line\n\n\n  second  ');
  });

  it('useInstruction requires a non-empty string', () => {
    for (const text of ['', '   ', 5]) {
      expect(() => render(() => useInstruction(text as never))).toThrow('[flue] useInstruction() requires a non-empty string.');
    }
  });

  it('a render inside a render throws Re-entrant agent render', () => {
    function Inner() {
      return 'inner';
    }
    function Outer() {
      render(Inner);
      return 'outer';
    }
    expect(() => render(Outer)).toThrow(REENTRANT);
    // The outer frame is cleared: hooks outside a render throw again, and renders work.
    expect(() => useInstruction('x')).toThrow(/outside an agent function/);
    expect(render(Inner).instructions).toBe('inner');
  });
  // Seed 004: "直接调用另一个智能体函数的智能体函数会抛出 [flue] Re-entrant agent render." A plain
  // call Inner() from Outer's body never enters render(): the build guards every agent function's
  // body instead (src/build/agent-guard.ts, tested in agent-guard.test.ts and by `flue run` in
  // cli.test.ts). Sources imported without a build, as here, are not guarded.
});

describe('duplicate names in one render', () => {
  it('two tools with one name throw ToolNameConflictError (tool_name_conflict)', () => {
    const error = thrown(() =>
      render(() => {
        useTool(tool('lookup'));
        useTool(tool('lookup'));
      }),
    );
    expectFlueError(error, ToolNameConflictError, 'tool_name_conflict');
  });

  it('duplicates count across custom hooks and inline definitions', () => {
    const useLookup = () => useTool(tool('lookup'));
    const error = thrown(() =>
      render(() => {
        useLookup();
        useTool({ name: 'lookup', description: 'Inline twin.', run: () => 'x' });
      }),
    );
    expectFlueError(error, ToolNameConflictError, 'tool_name_conflict');
  });

  it('two state names throw', () => {
    expect(() =>
      render(() => {
        usePersistentState('count', 0);
        usePersistentState('count', 1);
      }),
    ).toThrow(/^\[flue\] usePersistentState\("count"\)/);
  });

  it('two data-part names throw', () => {
    expect(() =>
      render(() => {
        useDataWriter('progress');
        useDataWriter('progress');
      }),
    ).toThrow(/^\[flue\] useDataWriter\("progress"\)/);
  });

  it('distinct names are fine', () => {
    const result = render(() => {
      useTool(tool('a'));
      useTool(tool('b'));
      usePersistentState('x', 1);
      usePersistentState('y', 2);
    });
    expect(result.tools.map((t) => t.name)).toEqual(['a', 'b']);
  });
});

describe('call-site rules', () => {
  const hooks: [string, () => unknown][] = [
    ['useModel', () => useModel('anthropic/claude-haiku-4-5')],
    ['useTool', () => useTool(tool('t'))],
    ['useInstruction', () => useInstruction('x')],
    ['usePersistentState', () => usePersistentState('s', 0)],
    ['useInitialData', () => useInitialData()],
    ['useDelivery', () => useDelivery()],
    ['useDispatchMessage', () => useDispatchMessage()],
    ['useDataWriter', () => useDataWriter('d')],
    ['useAgentStart', () => useAgentStart(() => {})],
    ['useAgentFinish', () => useAgentFinish(() => {})],
    ['useResponseStart', () => useResponseStart(() => {})],
    ['useResponseFinish', () => useResponseFinish(() => {})],
  ];

  it.each(hooks)('%s() outside a render throws "was called outside an agent function"', (name, call) => {
    const error = thrown(call);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(new RegExp(`^\\[flue\\] ${name}\\(\\) was called outside an agent function`));
  });

  it('a custom hook outside a render throws at its first inner hook', () => {
    const useCustom = () => {
      useInstruction('x');
      useModel('anthropic/claude-haiku-4-5');
    };
    expect(useCustom).toThrow(/^\[flue\] useInstruction\(\) was called outside an agent function/);
  });

  it('hooks called later from a callback (after the render returned) throw', () => {
    let later: (() => void) | undefined;
    render(() => {
      later = () => useInstruction('too late');
    });
    expect(later).toThrow(/outside an agent function/);
  });

  it('a state setter called during the render throws and writes nothing', () => {
    const scope = stubScope();
    expect(() =>
      render(
        () => {
          const [, set] = usePersistentState('count', 0);
          set(1);
        },
        { scope, props: { id: 'inst-1' } },
      ),
    ).toThrow(/^\[flue\] The setter of usePersistentState\("count"\) cannot be called while an agent function renders/);
    expect(scope.setState).not.toHaveBeenCalled();
  });

  it('a data writer called during the render throws and writes nothing', () => {
    const scope = stubScope();
    expect(() =>
      render(
        () => {
          useDataWriter('progress')({ step: 1 });
        },
        { scope, props: { id: 'inst-1' } },
      ),
    ).toThrow(/cannot be called while an agent function renders/);
    expect(scope.writeData).not.toHaveBeenCalled();
  });

  it('a dispatcher called during the render fails and dispatches nothing', async () => {
    const scope = stubScope();
    let attempt: Promise<unknown> | undefined;
    render(
      () => {
        attempt = useDispatchMessage()('loop');
      },
      { scope, props: { id: 'inst-1' } },
    );
    await expect(attempt).rejects.toThrow(/cannot be called while an agent function renders/);
    expect(scope.dispatch).not.toHaveBeenCalled();
  });

  it('the same effects work after the render (through the scope)', async () => {
    const scope = stubScope();
    let effects: (() => Promise<unknown>) | undefined;
    render(
      () => {
        const [, set] = usePersistentState('count', 0);
        const write = useDataWriter('progress');
        const send = useDispatchMessage();
        effects = async () => {
          set((n) => n + 1);
          write({ step: 1 });
          return send('next');
        };
      },
      { scope, props: { id: 'inst-1' } },
    );
    await effects!();
    expect(scope.setState).toHaveBeenCalledTimes(1);
    expect(scope.writeData).toHaveBeenCalledWith('progress', { step: 1 });
    expect(scope.dispatch).toHaveBeenCalledWith('next');
  });

  it('effects from a bare render (no runtime behind it) throw when invoked', async () => {
    let effects: { set: (n: number) => void; write: (d: unknown) => void; send: (m: string) => Promise<unknown> } | undefined;
    render(() => {
      const [, set] = usePersistentState('count', 0);
      effects = { set, write: useDataWriter('progress'), send: useDispatchMessage() };
    });
    expect(() => effects!.set(1)).toThrow(/^\[flue\] /);
    expect(() => effects!.write(1)).toThrow(/^\[flue\] /);
    await expect(effects!.send('x')).rejects.toThrow(/^\[flue\] /);
  });
});

describe('useModel', () => {
  it('twice in one render throws', () => {
    expect(() =>
      render(() => {
        useModel('anthropic/claude-haiku-4-5');
        useModel('anthropic/claude-sonnet-4-6');
      }),
    ).toThrow(/^\[flue\] useModel\(\) was called twice/);
  });

  it('records the specifier and thinking level', () => {
    const result = render(() => {
      useModel('anthropic/claude-haiku-4-5', { thinkingLevel: 'high' });
    });
    expect(result.model).toEqual({ spec: 'anthropic/claude-haiku-4-5', thinkingLevel: 'high' });
  });

  it('a bad thinkingLevel throws listing every valid value', () => {
    const error = thrown(() => render(() => useModel('anthropic/claude-haiku-4-5', { thinkingLevel: 'extreme' as never })));
    const message = (error as Error).message;
    expect(message).toMatch(/^\[flue\] useModel\(\) thinkingLevel/);
    for (const level of ['off', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']) expect(message).toContain(level);
    expect(message).toContain('extreme');
  });

  it('an unknown option throws naming it', () => {
    expect(() => render(() => useModel('anthropic/claude-haiku-4-5', { temperature: 1 } as never))).toThrow(
      /^\[flue\] useModel\(\) got an unknown option "temperature"/,
    );
  });

  it('non-object options and an empty specifier throw', () => {
    expect(() => render(() => useModel('anthropic/claude-haiku-4-5', 'high' as never))).toThrow(/^\[flue\] useModel\(\) options/);
    expect(() => render(() => useModel(''))).toThrow(/^\[flue\] useModel\(\) requires/);
    expect(() => render(() => useModel('   '))).toThrow(/^\[flue\] useModel\(\) requires/);
  });
});

describe('useDataWriter invariance', () => {
  it('a name added between renders throws naming it', () => {
    const scope = stubScope({ dataWriterNames: ['progress'] });
    expect(() =>
      render(
        () => {
          useDataWriter('progress');
          useDataWriter('sources');
        },
        { scope, props: { id: 'inst-1' } },
      ),
    ).toThrow(/^\[flue\] .*message data added sources/);
  });

  it('a name removed between renders throws naming it', () => {
    const scope = stubScope({ dataWriterNames: ['progress', 'sources'] });
    expect(() => render(() => void useDataWriter('progress'), { scope, props: { id: 'inst-1' } })).toThrow(/removed sources/);
  });

  it('the same names in another order are fine', () => {
    const scope = stubScope({ dataWriterNames: ['a', 'b'] });
    const result = render(
      () => {
        useDataWriter('b');
        useDataWriter('a');
      },
      { scope, props: { id: 'inst-1' } },
    );
    expect([...result.dataWriterNames].sort()).toEqual(['a', 'b']);
  });

  it('a schema validates each write; unknown option keys throw', async () => {
    const scope = stubScope();
    let write: ((data: { step: number }) => void) | undefined;
    render(
      () => {
        write = useDataWriter('progress', { schema: v.object({ step: v.number() }) });
      },
      { scope, props: { id: 'inst-1' } },
    );
    expect(() => write!({ step: 'one' } as never)).toThrow(/^\[flue\] useDataWriter\("progress"\) write does not match/);
    expect(scope.writeData).not.toHaveBeenCalled();
    expect(() => render(() => void useDataWriter('x', { schema: v.string(), other: 1 } as never))).toThrow(/unknown option "other"/);
  });
});

describe('frames and props', () => {
  it('the frame is cleared after a throwing render, and the next render works', () => {
    expect(() =>
      render(() => {
        useInstruction('partial');
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(() => useInstruction('x')).toThrow(/outside an agent function/);
    const result = render(() => {
      useInstruction('clean');
      return 'fresh';
    });
    expect(result.instructions).toBe('fresh\n\nclean');
  });

  it('the frame is cleared after a render rejected by the sync rule', () => {
    expect(() => render((async () => useInstruction('x')) as never)).toThrow(SYNC);
    expect(() => useInstruction('x')).toThrow(/outside an agent function/);
  });

  it('declarations from a failed render do not leak into the next', () => {
    expect(() =>
      render(() => {
        useTool(tool('leaky'));
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(render(() => void useTool(tool('leaky'))).tools.map((t) => t.name)).toEqual(['leaky']);
  });

  it('reading props.id in a bare render throws; with props it is the instance id', () => {
    const ReadsId = (props: { id: string }) => `id=${props.id}`;
    const error = thrown(() => render(ReadsId));
    expect((error as Error).message).toMatch(/^\[flue\] props\.id/);
    expect(error).not.toBeInstanceOf(FlueError);
    expect(render(ReadsId, { props: { id: 'order-7' } }).instructions).toBe('id=order-7');
    // A bare render that never reads props.id is fine.
    expect(render(() => 'ok').instructions).toBe('ok');
  });

  it('a bare render has no delivery and no initial data', () => {
    expect(() => render(() => void useDelivery())).toThrow(/^\[flue\] useDelivery\(\) found no delivered message/);
    let data: unknown = 'unset';
    render(() => {
      data = useInitialData();
    });
    expect(data).toBeUndefined();
  });

  it('a scoped render reads delivery, initial data and state from its scope', () => {
    const scope = stubScope({
      delivery: { kind: 'signal', type: 'slack.message', body: 'hi' },
      initialData: { issue: 7 },
      readState: (name) => (name === 'count' ? { found: true, value: 5 } : { found: false }),
    });
    let seen: unknown[] = [];
    render(
      () => {
        seen = [useDelivery(), useInitialData(), usePersistentState('count', 0)[0], usePersistentState('other', 'dflt')[0]];
      },
      { scope, props: { id: 'inst-1' } },
    );
    expect(seen).toEqual([{ kind: 'signal', type: 'slack.message', body: 'hi' }, { issue: 7 }, 5, 'dflt']);
  });
});
