/** describeForDeveloper(): the message, the first src/ frame, and frames mapped to the sources. */
import { afterEach, describe, expect, it } from 'vitest';
import { describeForDeveloper, mapFrames, setDevSourceMap } from './dev-stack.ts';
import type { SourcePosition } from './source-map.ts';

afterEach(() => setDevSourceMap(undefined));

function thrown(stack: string, message = 'the lookup failed'): TypeError {
  const error = new TypeError(message);
  error.stack = `TypeError: ${message}\n${stack}`;
  return error;
}

/** A bundle whose lines 100 and 200 come from the user's agent and the runtime. */
const bundleMap = {
  lookup(line: number, column: number): SourcePosition | undefined {
    if (line === 100) return { file: 'src/agents/orders.ts', line: 12, column: column - 2 };
    if (line === 200) return { file: 'node_modules/flue-workers/dist/cloudflare.js', line: 7, column: 3 };
    return undefined;
  },
};

describe('describeForDeveloper', () => {
  it('maps Worker bundle frames through the installed source map and names the first src/ frame', () => {
    setDevSourceMap({ bundle: 'worker.js', map: bundleMap });
    const error = thrown(
      [
        '    at render (file:///p/dist/worker.js:200:9)',
        '    at Orders (file:///p/dist/worker.js:100:7)',
        '    at async Promise.all (index 0)',
        '    at file:///p/dist/worker.js:300:1',
      ].join('\n'),
    );
    expect(describeForDeveloper(error)).toBe(
      [
        'TypeError: the lookup failed (at src/agents/orders.ts:12:5)',
        '    at render (node_modules/flue-workers/dist/cloudflare.js:7:3)',
        '    at Orders (src/agents/orders.ts:12:5)',
        '    at async Promise.all (index 0)',
        '    at /p/dist/worker.js:300:1',
      ].join('\n'),
    );
  });

  it('without a source map, makes frames relative to the project (Node maps its own stacks)', () => {
    const root = process.cwd();
    const error = thrown(`    at Orders (file://${root}/src/agents/orders.ts:3:11)\n    at ${root}/node_modules/x/index.js:1:1`);
    expect(describeForDeveloper(error)).toBe(
      'TypeError: the lookup failed (at src/agents/orders.ts:3:11)\n    at Orders (src/agents/orders.ts:3:11)\n    at node_modules/x/index.js:1:1',
    );
  });

  it('leaves the head alone when no frame is in src/, and frames of other files unmapped', () => {
    setDevSourceMap({ bundle: 'worker.js', map: bundleMap });
    expect(mapFrames('\n    at f (/elsewhere/lib.js:100:7)')).toEqual({ text: '\n    at f (/elsewhere/lib.js:100:7)' });
    expect(describeForDeveloper(thrown('    at g (/elsewhere/lib.js:1:1)'))).toBe(
      'TypeError: the lookup failed\n    at g (/elsewhere/lib.js:1:1)',
    );
  });

  it('keeps a multi-line message whole, and describes thrown non-errors', () => {
    expect(describeForDeveloper(thrown(`    at f (${process.cwd()}/src/a.ts:2:3)`, 'line one\nline two'))).toBe(
      'TypeError: line one\nline two (at src/a.ts:2:3)\n    at f (src/a.ts:2:3)',
    );
    expect(describeForDeveloper('plain text')).toBe('Thrown value: plain text');
    expect(describeForDeveloper({ code: 7 })).toBe('Thrown value: {"code":7}');
    const noStack = new RangeError('no stack');
    noStack.stack = undefined;
    expect(describeForDeveloper(noStack)).toBe('RangeError: no stack');
  });
});
