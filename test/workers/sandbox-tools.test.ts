/**
 * The six built-in tools on the Cloudflare host, end to end: a real agent in a Durable Object with
 * a virtualSandbox(), a scripted model calling each tool, and assertions on the tool results the
 * model received (success and error cases, truncation limits, path-escape attempts), plus the
 * packaged-skill overlay at /.flue/packaged-skills/ (sandbox.md §4).
 */
import { afterEach, beforeEach, expect, test } from 'vitest';
import { init } from '@flue/runtime';
import type { ScriptedResponse } from '@flue/runtime/testing';
import { LAB_TOOLS_LANE, MANY_HITS, SandboxLab, WIDE_LINE, labNotes, numbered } from './sandbox-agents.ts';
import { laneRequests, resetLane, scriptLane } from './lanes.ts';
import './worker.ts';

const LANE = LAB_TOOLS_LANE;

type Call = { name: string; arguments: Record<string, unknown> };
interface Result {
  name: string;
  content: string;
  isError: boolean;
}

/** Runs one response whose single model step makes `calls`; returns the results, in call order. */
async function runCalls(id: string, calls: Call[]): Promise<Result[]> {
  await scriptLane(LANE, { toolCalls: calls } as ScriptedResponse, { text: 'done' });
  const handle = init(SandboxLab, { id });
  expect((await handle.read(await handle.dispatch('Use the tools.'))).text).toBe('done');
  const requests = await laneRequests(LANE);
  const request = requests.at(-1)!;
  const made = request.messages.filter((m) => m.role === 'assistant' && m.toolCalls?.length).at(-1)!.toolCalls!;
  expect(made.map((c) => c.name)).toEqual(calls.map((c) => c.name));
  return made.map((call) => {
    const result = request.messages.find((m) => m.role === 'tool' && m.toolCallId === call.id)!;
    return { name: call.name, content: result.content, isError: result.isError === true };
  });
}

const ok = (content: string) => ({ content, isError: false });
const failed = (content: string) => ({ content, isError: true });

beforeEach(async () => resetLane(LANE));
afterEach(async () => resetLane(LANE));

test('the model is offered the six built-in tools', async () => {
  await runCalls('tools-list', [{ name: 'bash', arguments: { command: 'true' } }]);
  const names = (await laneRequests(LANE))[0]!.tools.map((t) => t.name);
  expect(names).toEqual(expect.arrayContaining(['read', 'write', 'edit', 'bash', 'grep', 'glob']));
});

test('read: whole files, paging, truncation at 2000 lines / 51200 chars, over-long first line, errors', async () => {
  const results = await runCalls('tools-read', [
    { name: 'read', arguments: { path: 'notes.txt' } },
    { name: 'read', arguments: { path: 'notes.txt', offset: 2, limit: 1 } },
    { name: 'read', arguments: { path: 'data/lines.txt' } },
    { name: 'read', arguments: { path: 'data/lines.txt', offset: 2001 } },
    { name: 'read', arguments: { path: 'data/wide.txt' } },
    { name: 'read', arguments: { path: 'data/long-line.txt' } },
    { name: 'read', arguments: { path: 'notes.txt', offset: 9 } },
    { name: 'read', arguments: { path: 'missing.txt' } },
    { name: 'read', arguments: { path: 'src' } },
    { name: 'read', arguments: { path: 42 } },
  ]);
  expect(results[0]).toMatchObject(ok('alpha\nbeta\ngamma'));
  expect(results[1]).toMatchObject(ok('beta\n\n[Showing lines 2-2 of 3. Use offset=3 to continue.]'));
  expect(results[2]!.isError).toBe(false);
  expect(results[2]!.content.startsWith('line 1\nline 2\n')).toBe(true);
  expect(results[2]!.content.endsWith('line 2000\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]')).toBe(true);
  expect(results[3]).toMatchObject(ok(numbered(2500).split('\n').slice(2000).join('\n')));
  // 512 lines of 99 chars + 511 newlines = 51199 ≤ 51200; the 513th would exceed.
  expect(results[4]).toMatchObject(
    ok(`${Array(512).fill(WIDE_LINE).join('\n')}\n\n[Showing lines 1-512 of 1000. Use offset=513 to continue.]`),
  );
  expect(results[5]!.content.startsWith(`${'y'.repeat(51_200)}\n\n[Line 1 is 60000 characters long; only its first 51200 are shown.`)).toBe(
    true,
  );
  expect(results[5]!.content).toContain('cannot be reached with offset/limit');
  expect(results[6]).toMatchObject(failed('Offset 9 is beyond end of file (3 lines total)'));
  expect(results[7]).toMatchObject(failed("ENOENT: no such file or directory, open '/workspace/missing.txt'"));
  expect(results[8]).toMatchObject(failed("EISDIR: illegal operation on a directory, read '/workspace/src'"));
  expect(results[9]!.isError).toBe(true);
  expect(results[9]!.content).toContain('path');
});

test('write: creates parents, overwrites, reports the length; errors for a directory or a file parent', async () => {
  const results = await runCalls('tools-write', [
    { name: 'write', arguments: { path: 'new/dir/f.txt', content: 'hello' } },
    { name: 'write', arguments: { path: 'notes.txt', content: 'replaced' } },
    { name: 'write', arguments: { path: 'src', content: 'x' } },
    { name: 'write', arguments: { path: 'c.txt/below.txt', content: 'x' } },
  ]);
  expect(results[0]).toMatchObject(ok('Successfully wrote 5 bytes to new/dir/f.txt'));
  expect(results[1]).toMatchObject(ok('Successfully wrote 8 bytes to notes.txt'));
  expect(results[2]!.isError).toBe(true);
  expect(results[2]!.content).toContain('EISDIR');
  expect(results[3]!.isError).toBe(true);
  expect(results[3]!.content).toMatch(/ENOTDIR|EEXIST/);
  const [check] = await runCalls('tools-write', [{ name: 'bash', arguments: { command: 'cat new/dir/f.txt; echo; cat notes.txt' } }]);
  expect(check).toMatchObject(ok('hello\nreplaced'));
});

test('edit: literal unique replacement, replaceAll, and its four errors', async () => {
  const results = await runCalls('tools-edit', [
    { name: 'edit', arguments: { path: 'src/a.ts', oldText: 'foo(bar);', newText: 'foo("$&$1");' } },
    { name: 'edit', arguments: { path: 'dup.txt', oldText: 'x', newText: 'y', replaceAll: true } },
    { name: 'edit', arguments: { path: 'notes.txt', oldText: '', newText: 'y' } },
    { name: 'edit', arguments: { path: 'notes.txt', oldText: 'zzz', newText: 'y' } },
    { name: 'edit', arguments: { path: 'c.txt', oldText: 'o', newText: '0' } },
    { name: 'edit', arguments: { path: 'nope.txt', oldText: 'a', newText: 'b' } },
  ]);
  expect(results[0]).toMatchObject(ok('Successfully replaced text in src/a.ts.'));
  expect(results[1]).toMatchObject(ok('Replaced 3 occurrences in dup.txt'));
  expect(results[2]).toMatchObject(failed('oldText must not be empty. To create or overwrite a whole file, use the write tool.'));
  expect(results[3]!.isError).toBe(true);
  expect(results[3]!.content).toContain(
    'Could not find oldText in notes.txt. It must match the file exactly, including whitespace and indentation',
  );
  expect(results[4]!.isError).toBe(true);
  expect(results[4]!.content).toContain(
    'Found 2 occurrences of oldText in c.txt. Add more surrounding context to oldText to make it unique, or set replaceAll to true',
  );
  expect(results[5]).toMatchObject(failed('File not found: nope.txt'));
  const [check] = await runCalls('tools-edit', [{ name: 'bash', arguments: { command: 'cat src/a.ts dup.txt' } }]);
  expect(check).toMatchObject(ok('const foo = 1;\nfoo("$&$1");\ny y y'));
});

test('bash: combined output, exit codes, unknown commands, tail truncation, timeout', async () => {
  const results = await runCalls('tools-bash', [
    { name: 'bash', arguments: { command: 'echo out; echo err >&2' } },
    { name: 'bash', arguments: { command: 'true' } },
    { name: 'bash', arguments: { command: 'echo partial; exit 3' } },
    { name: 'bash', arguments: { command: 'nosuch' } },
    { name: 'bash', arguments: { command: 'seq 2500' } },
    { name: 'bash', arguments: { command: 'cat data/wide.txt' } },
    { name: 'bash', arguments: { command: 'hang', timeout: 0.05 } },
  ]);
  expect(results[0]).toMatchObject(ok('out\n\nerr'));
  expect(results[1]).toMatchObject(ok('(no output)'));
  expect(results[2]).toMatchObject(ok('partial\n\nCommand exited with code 3'));
  expect(results[3]).toMatchObject(ok('nosuch: command not found\n\nCommand exited with code 127'));
  expect(results[4]!.content.startsWith('501\n502\n')).toBe(true);
  expect(results[4]!.content.endsWith('2500\n\n[Showing lines 501-2500 of 2500. Earlier output was truncated.]')).toBe(true);
  expect(results[5]).toMatchObject(
    ok(`${Array(512).fill(WIDE_LINE).join('\n')}\n\n[Showing lines 489-1000 of 1000. Earlier output was truncated.]`),
  );
  expect(results[6]).toMatchObject(ok('[flue] Command timed out after 0.05 seconds.\n\nCommand exited with code 124'));
});

test('grep: path:line:text, include and literal, no match, errors, capped at 100 lines of 500 chars', async () => {
  const results = await runCalls('tools-grep', [
    { name: 'grep', arguments: { pattern: 'foo', path: 'src' } },
    { name: 'grep', arguments: { pattern: 'foo', path: 'src', include: '*.ts' } },
    { name: 'grep', arguments: { pattern: 'foo(', literal: true, path: 'src' } },
    { name: 'grep', arguments: { pattern: "it's", path: 'c.txt' } },
    { name: 'grep', arguments: { pattern: 'zzz-not-there' } },
    { name: 'grep', arguments: { pattern: 'foo', path: 'missing' } },
    { name: 'grep', arguments: { pattern: '(', path: 'src' } },
    { name: 'grep', arguments: { pattern: 'hit', path: 'data/many.txt' } },
  ]);
  expect(results[0]).toMatchObject(ok('src/a.ts:1:const foo = 1;\nsrc/a.ts:2:foo(bar);\nsrc/b.md:1:foo in docs'));
  expect(results[1]).toMatchObject(ok('src/a.ts:1:const foo = 1;\nsrc/a.ts:2:foo(bar);'));
  expect(results[2]).toMatchObject(ok('src/a.ts:2:foo(bar);'));
  expect(results[3]).toMatchObject(ok("c.txt:1:it's foo"));
  expect(results[4]).toMatchObject(ok('No matches found.'));
  expect(results[5]).toMatchObject(failed('grep failed (exit code 2): grep: missing: No such file or directory'));
  expect(results[6]!.isError).toBe(true);
  expect(results[6]!.content).toContain('invalid regular expression');
  const [body, note] = results[7]!.content.split('\n\n');
  const lines = body!.split('\n');
  expect(lines).toHaveLength(100);
  expect(lines[0]).toBe(`${`data/many.txt:1:${MANY_HITS.split('\n')[0]}`.slice(0, 500)}...`);
  expect(note).toBe('[Showing 100 of 150 matches. Narrow your search.]');
});

test('glob: by name under a path, no match, a missing directory', async () => {
  const results = await runCalls('tools-glob', [
    { name: 'glob', arguments: { pattern: '*.ts' } },
    { name: 'glob', arguments: { pattern: '*.md', path: 'src' } },
    { name: 'glob', arguments: { pattern: '*.py' } },
    { name: 'glob', arguments: { pattern: '*', path: 'missing' } },
  ]);
  expect(results[0]).toMatchObject(ok('./src/a.ts'));
  expect(results[1]).toMatchObject(ok('src/b.md'));
  expect(results[2]).toMatchObject(ok('No files found matching pattern.'));
  expect(results[3]).toMatchObject(ok('No files found matching pattern.'));
});

test('glob: capped at 1000 paths', async () => {
  const [result] = await runCalls('tools-glob-cap', [{ name: 'glob', arguments: { pattern: '*.txt' } }]);
  expect(result!.isError).toBe(false);
  expect(result!.content.split('\n')).toHaveLength(1000);
});

test('path escapes: `..` and absolute paths resolve inside the virtual filesystem, never the host', async () => {
  const results = await runCalls('tools-escape', [
    { name: 'read', arguments: { path: '../../../../etc/passwd' } },
    { name: 'read', arguments: { path: '/etc/passwd' } },
    { name: 'write', arguments: { path: '../../../outside.txt', content: 'contained' } },
    { name: 'bash', arguments: { command: 'cat ../../../etc/passwd' } },
    { name: 'read', arguments: { path: '/workspace/../../../workspace/./notes.txt' } },
    { name: 'grep', arguments: { pattern: 'root', path: '/etc' } },
    { name: 'glob', arguments: { pattern: 'passwd', path: '../../..' } },
  ]);
  expect(results[0]).toMatchObject(failed("ENOENT: no such file or directory, open '/etc/passwd'"));
  expect(results[1]).toMatchObject(failed("ENOENT: no such file or directory, open '/etc/passwd'"));
  expect(results[2]).toMatchObject(ok('Successfully wrote 9 bytes to ../../../outside.txt'));
  expect(results[3]).toMatchObject(ok('cat: ../../../etc/passwd: No such file or directory\n\nCommand exited with code 1'));
  expect(results[4]).toMatchObject(ok('alpha\nbeta\ngamma'));
  expect(results[5]).toMatchObject(failed('grep failed (exit code 2): grep: /etc: No such file or directory'));
  expect(results[6]).toMatchObject(ok('No files found matching pattern.'));
  // The write that climbed out of the cwd landed at the virtual root, the whole world of this sandbox.
  const [listing] = await runCalls('tools-escape', [{ name: 'bash', arguments: { command: 'ls / && cat /outside.txt' } }]);
  expect(listing).toMatchObject(ok('outside.txt\nworkspace\ncontained'));
});

test('packaged skills are readable, read-only, under /.flue/packaged-skills/ (and invisible to the shell)', async () => {
  const root = `/.flue/packaged-skills/${encodeURIComponent(labNotes.id)}`;
  const results = await runCalls('tools-skills', [
    { name: 'read', arguments: { path: `${root}/ref/guide.md` } },
    { name: 'read', arguments: { path: `../.flue/packaged-skills/${labNotes.id}/ref/guide.md`, offset: 3, limit: 1 } },
    { name: 'read', arguments: { path: `${root}/SKILL.md` } },
    { name: 'read', arguments: { path: `${root}/logo.png` } },
    { name: 'read', arguments: { path: `${root}/ref/nope.md` } },
    { name: 'write', arguments: { path: `${root}/ref/guide.md`, content: 'tampered' } },
    { name: 'bash', arguments: { command: `cat '${root}/ref/guide.md'` } },
    { name: 'read_skill_resource', arguments: { path: `${root}/ref/guide.md` } },
  ]);
  expect(results[0]).toMatchObject(ok('# Lab notes guide\n\n1. Date every entry.\n2. One finding per line.'));
  expect(results[1]).toMatchObject(ok('1. Date every entry.\n\n[Showing lines 3-3 of 4. Use offset=4 to continue.]'));
  expect(results[2]!.content).toContain('Follow ref/guide.md when writing notes.');
  // Binary files are served as base64 text.
  expect(results[3]).toMatchObject(ok('iVBORw0KGgoAAAANSUhEUv/+'));
  expect(results[4]).toMatchObject(failed(`[flue] Packaged skill file not found: ${root}/ref/nope.md`));
  expect(results[5]).toMatchObject(failed(`[flue] Packaged skill files are read-only: ${root}/ref/guide.md`));
  expect(results[6]!.content).toContain('No such file or directory');
  expect(results[7]).toMatchObject(ok('# Lab notes guide\n\n1. Date every entry.\n2. One finding per line.'));
});
