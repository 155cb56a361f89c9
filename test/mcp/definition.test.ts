import { describe, expect, it } from 'vitest';
import { defineMcpConnection } from '../../src/runtime/mcp/index.ts';
import type { McpConnectionDefinition } from '../../src/runtime/mcp/index.ts';

const bad = (def: unknown) => () => defineMcpConnection(def as McpConnectionDefinition);

describe('defineMcpConnection', () => {
  it('returns a frozen copy with a frozen tools copy', () => {
    const tools = ['a', 'b'];
    const def = defineMcpConnection({ name: 'linear', url: 'https://mcp.example.com/mcp', tools, optional: true });
    expect(Object.isFrozen(def)).toBe(true);
    expect(Object.isFrozen(def.tools)).toBe(true);
    expect(def.tools).not.toBe(tools);
    expect(def).toEqual({ name: 'linear', url: 'https://mcp.example.com/mcp', tools: ['a', 'b'], optional: true });
    // Per-mount overrides spread cleanly and re-validate.
    expect(defineMcpConnection({ ...def, tools: ['a'] }).tools).toEqual(['a']);
    // Already-validated definitions pass through unchanged.
    expect(defineMcpConnection(def)).toBe(def);
  });

  it('accepts every documented field', () => {
    const def = defineMcpConnection({
      name: 's',
      url: new URL('http://127.0.0.1:1/mcp'),
      transport: 'sse',
      auth: () => 'tok',
      headers: { 'x-a': '1' },
      requestInit: { credentials: 'omit' },
      fetch: (input, init) => fetch(input, init),
      timeoutMs: 1500,
      resetTimeoutOnProgress: true,
      tools: ['x'],
      optional: false,
    });
    expect(def.transport).toBe('sse');
    // Every documented form of headers: a Headers object and [name, value] pairs too.
    expect(defineMcpConnection({ name: 'h', url: 'http://x.test', headers: new Headers({ 'x-a': '1' }) }).headers).toBeInstanceOf(Headers);
    expect(defineMcpConnection({ name: 'p', url: 'http://x.test', headers: [['x-a', '1']] }).headers).toEqual([['x-a', '1']]);
  });

  it('rejects non-objects and unknown fields', () => {
    expect(bad(null)).toThrow(/must be an object/);
    expect(bad(['x'])).toThrow(/must be an object/);
    expect(bad({ name: 's', url: 'http://x.test', bogus: 1 })).toThrow(/unknown field "bogus"/);
  });

  it.each([
    [{ url: 'http://x.test' }, /"name" is required/],
    [{ name: '  ', url: 'http://x.test' }, /"name" must be a non-empty string/],
    [{ name: 's' }, /"url" is required/],
    [{ name: 's', url: '/relative/mcp' }, /"url" must be a URL or a string that parses as an absolute URL/],
    [{ name: 's', url: 'http://x.test', transport: 'websocket' }, /"transport" must be "streamable-http" or "sse"/],
    [{ name: 's', url: 'http://x.test', auth: '' }, /"auth" must be/],
    [{ name: 's', url: 'http://x.test', auth: 42 }, /"auth" must be/],
    [{ name: 's', url: 'http://x.test', headers: { a: 1 } }, /"headers" must be/],
    [{ name: 's', url: 'http://x.test', requestInit: 'x' }, /"requestInit" must be/],
    [{ name: 's', url: 'http://x.test', fetch: {} }, /"fetch" must be a function/],
    [{ name: 's', url: 'http://x.test', timeoutMs: 0 }, /"timeoutMs" must be a positive finite number/],
    [{ name: 's', url: 'http://x.test', timeoutMs: Infinity }, /"timeoutMs"/],
    [{ name: 's', url: 'http://x.test', resetTimeoutOnProgress: 'yes' }, /"resetTimeoutOnProgress" must be a boolean/],
    [{ name: 's', url: 'http://x.test', tools: 'a' }, /"tools" must be an array/],
    [{ name: 's', url: 'http://x.test', tools: ['a', ''] }, /"tools" must be an array of non-empty/],
    [{ name: 's', url: 'http://x.test', optional: 1 }, /"optional" must be a boolean/],
  ])('rejects malformed %j naming the field', (def, message) => {
    expect(bad(def)).toThrow(message);
    expect(bad(def)).toThrow(/^\[flue\] defineMcpConnection\(\)/);
  });
});
