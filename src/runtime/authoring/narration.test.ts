import { describe, expect, it } from 'vitest';
import * as v from 'valibot';
import { defineTool } from './define-tool.ts';
import {
  type ResourceSnapshot,
  canonicalJson,
  digestInstructions,
  environmentBody,
  fnv1a64,
  mcpUnavailableBody,
  narrate,
  resourceSnapshot,
  sameSnapshot,
} from './narration.ts';

const tool = (name: string, description = `The ${name} tool.`, input: v.ObjectSchema<v.ObjectEntries, undefined> = v.object({})) =>
  defineTool({ name, description, input, run: () => 'ok' });

function snapshot(parts: Partial<Parameters<typeof resourceSnapshot>[0]> = {}): ResourceSnapshot {
  return resourceSnapshot({ tools: [], skills: [], subagents: [], instructions: 'Be brief.', sandbox: false, ...parts });
}

describe('digests', () => {
  it('fnv1a64 is the 64-bit FNV-1a of the UTF-8 text', () => {
    expect(fnv1a64('')).toBe('cbf29ce484222325');
    expect(fnv1a64('a')).toBe('af63dc4c8601ec8c');
    expect(fnv1a64('foobar')).toBe('85944171f73967e8');
  });

  it('fnv1a64 matches a BigInt reference on multi-byte text', () => {
    const reference = (text: string) => {
      let hash = 0xcbf29ce484222325n;
      for (const byte of new TextEncoder().encode(text)) hash = ((hash ^ BigInt(byte)) * 0x100000001b3n) & 0xffffffffffffffffn;
      return hash.toString(16).padStart(16, '0');
    };
    for (const text of ['帮助客户检查他们的订单状态。', 'x'.repeat(1000), 'emoji 🚀 and \u0000 nul', JSON.stringify({ a: [1, 2, 3] })]) {
      expect(fnv1a64(text)).toBe(reference(text));
    }
  });

  it('an undefined instruction document digests as the empty string', () => {
    expect(digestInstructions(undefined)).toBe(fnv1a64(''));
    expect(digestInstructions('x')).not.toBe(digestInstructions(undefined));
  });

  it('digests a document as fnv1a64 does, asked again or after more documents than it keeps', () => {
    const documents = Array.from({ length: 40 }, (_, i) => `You are agent ${i}. ${'Be careful. '.repeat(i)}`);
    for (let round = 0; round < 2; round++) {
      for (const text of documents) expect(digestInstructions(text)).toBe(fnv1a64(text));
      expect(digestInstructions(documents[0])).toBe(fnv1a64(documents[0]!));
    }
  });

  it('tells equal snapshots from changed ones, the earlier one asked about again', () => {
    const earlier = {
      tools: [{ name: 't', description: 'd', schema: 'x' }],
      skills: [],
      subagents: [],
      instructionsDigest: 'a',
      sandbox: false,
    };
    expect(sameSnapshot(earlier, structuredClone(earlier))).toBe(true);
    expect(sameSnapshot(earlier, { ...earlier, instructionsDigest: 'b' })).toBe(false);
    expect(sameSnapshot(earlier, { ...earlier, tools: [] })).toBe(false);
    expect(sameSnapshot(earlier, { ...earlier, tools: [{ name: 't', description: 'd2', schema: 'x' }] })).toBe(false);
    expect(sameSnapshot(earlier, { ...earlier, tools: [{ name: 't', description: 'd', schema: 'y' }] })).toBe(false);
    expect(sameSnapshot(earlier, { ...earlier, tools: [{ name: 't', description: 'd' }] })).toBe(false);
    expect(sameSnapshot(earlier, { ...earlier, skills: [{ name: 's', description: 'd' }] })).toBe(false);
    expect(sameSnapshot(earlier, { ...earlier, subagents: [{ name: 'a', description: 'd' }] })).toBe(false);
    expect(sameSnapshot(earlier, { ...earlier, sandbox: true })).toBe(false);
    expect(sameSnapshot(earlier, structuredClone(earlier))).toBe(true);
    // As their JSON compares: an absent schema is an undefined one.
    const bare = { ...earlier, tools: [{ name: 't', description: 'd' }] };
    expect(sameSnapshot(bare, { ...earlier, tools: [{ name: 't', description: 'd', schema: undefined }] })).toBe(true);
  });

  it('canonical JSON sorts keys at every depth', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 0 }], c: null } })).toBe('{"a":{"c":null,"d":[2,{"y":0,"z":1}]},"b":1}');
  });
});

describe('resources bodies', () => {
  it('the first change lists added entries, removals, updates, then the full roster', () => {
    const before = snapshot({ tools: [tool('a'), tool('b')], skills: [{ name: 'review', description: 'Review code.' }] });
    const after = snapshot({
      tools: [tool('a', 'The a tool, now better.'), tool('c'), tool('d')],
      skills: [{ name: 'review', description: 'Review code carefully.' }],
      subagents: [{ name: 'helper', description: 'Helps.' }],
    });
    expect(narrate(before, after)).toEqual([
      {
        kind: 'tool',
        body: [
          'New tools available:',
          '- **c** — The c tool.',
          '- **d** — The d tool.',
          'The tool "b" is no longer available.',
          'The tool "a" was updated.',
          'All available tools: a, c, d',
        ].join('\n'),
      },
      {
        kind: 'skill',
        body: ['The skill "review" was updated:', '- **review** — Review code carefully.', 'All available skills: review'].join('\n'),
      },
      { kind: 'subagent', body: ['New agent available:', '- **helper** — Helps.', 'All available agents: helper'].join('\n') },
    ]);
  });

  it('a tool whose input schema changed is updated; an unchanged set narrates nothing', () => {
    const before = snapshot({ tools: [tool('a')] });
    expect(narrate(before, snapshot({ tools: [tool('a')] }))).toEqual([]);
    const after = snapshot({ tools: [tool('a', undefined, v.object({ id: v.string() }))] });
    expect(narrate(before, after)).toEqual([{ kind: 'tool', body: 'The tool "a" was updated.\nAll available tools: a' }]);
  });

  it('a removal that empties a kind ends with an empty roster', () => {
    const body = narrate(snapshot({ subagents: [{ name: 'x', description: 'X.' }] }), snapshot())[0]!.body;
    expect(body).toBe('The agent "x" is no longer available.\nAll available agents: ');
  });
});

describe('environment body', () => {
  it('restates the cwd, the warning and every roster', () => {
    expect(
      environmentBody({
        cwd: '/workspace',
        tools: ['read', 'bash'],
        skills: [{ name: 'review', description: 'Review.' }],
        subagents: [],
      }).split('\n'),
    ).toEqual([
      'The sandbox changed. Its working directory is now `/workspace`.',
      'Files, directories and command results from the earlier environment may be gone: re-check anything you learned about them before relying on it.',
      '',
      'All available tools: read, bash',
      'All available skills:',
      '- **review** — Review.',
      'All available agents: (none)',
    ]);
  });

  it('says there is no sandbox anymore when it went away', () => {
    const body = environmentBody({ cwd: undefined, tools: [], skills: [], subagents: [{ name: 'helper', description: 'Helps.' }] });
    expect(body.split('\n')[0]).toContain('no sandbox anymore');
    expect(body).toContain('All available tools: (none)');
    expect(body).toContain('All available skills: (none)');
    expect(body).toContain('All available agents:\n- **helper** — Helps.');
  });
});

describe('MCP availability body', () => {
  it('one server is one sentence; the reason is cut at 300 characters', () => {
    expect(mcpUnavailableBody([{ name: 'tracker', reason: 'connection failed: fetch failed' }])).toBe(
      'MCP server "tracker" is unavailable for this response: connection failed: fetch failed. Its tools are not mounted.',
    );
    const long = mcpUnavailableBody([{ name: 'x', reason: 'r'.repeat(400) }]);
    expect(long).toBe(`MCP server "x" is unavailable for this response: ${'r'.repeat(300)}…. Its tools are not mounted.`);
  });

  it('several servers are a header line and one line per server', () => {
    const lines = mcpUnavailableBody([
      { name: 'a', reason: 'down' },
      { name: 'b', reason: 'x'.repeat(301) },
    ]).split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/MCP servers are unavailable for this response; their tools are not mounted:$/);
    expect(lines[1]).toBe('- "a" — down');
    expect(lines[2]).toBe(`- "b" — ${'x'.repeat(300)}…`);
  });
});
