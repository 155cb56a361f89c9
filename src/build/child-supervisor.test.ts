import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { type ChildSupervisor, superviseChild } from './child-supervisor.ts';

/** A Node child running `script`, output piped, as the dev servers spawn theirs. */
const node = (script: string) => () => spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });

/** A child that prints its ready line in two writes (split before the URL, in colour), then stays up. */
const SERVER = `
  process.stdout.write('starting\\nReady on \\u001b[1m');
  setTimeout(() => process.stdout.write('http://127.0.0.1:8787\\u001b[0m\\n'), 20);
  process.stderr.write('a warning\\n');
  setInterval(() => {}, 1000);
`;

function harness(script: string, graceMs = 5_000) {
  const seen = { output: '', ready: [] as string[], newUrls: [] as string[], exits: [] as [number | null, string | null][] };
  let readyNow: (() => void) | undefined;
  let exitedNow: (() => void) | undefined;
  const supervisor = superviseChild({
    spawn: node(script),
    output: (text) => void (seen.output += text),
    readyPattern: /Ready on (https?:\/\/[^\s\u001b]+)/,
    onReady: (url) => {
      seen.ready.push(url);
      readyNow?.();
    },
    onNewUrl: (url) => void seen.newUrls.push(url),
    onExit: (code, signal) => {
      seen.exits.push([code, signal]);
      exitedNow?.();
    },
    graceMs,
  });
  const ready = () => new Promise<void>((resolve) => (readyNow = resolve));
  const exited = () => new Promise<void>((resolve) => (exitedNow = resolve));
  return { supervisor, seen, ready, exited };
}

let running: ChildSupervisor | undefined;
afterEach(async () => {
  await running?.stop('SIGKILL');
  running = undefined;
});

describe('superviseChild', () => {
  it('passes output on and finds the ready URL across chunks and colour codes; a restart at the same URL is not new', async () => {
    const { supervisor, seen, ready } = harness(SERVER);
    running = supervisor;
    let next = ready();
    supervisor.start();
    await next;
    expect(seen.ready).toEqual(['http://127.0.0.1:8787']);
    expect(seen.output).toContain('starting\n');
    expect(seen.output).toContain('a warning\n');
    next = ready();
    await supervisor.stop('SIGTERM');
    supervisor.start();
    await next;
    expect(seen.ready).toEqual(['http://127.0.0.1:8787', 'http://127.0.0.1:8787']);
    expect(seen.newUrls).toEqual(['http://127.0.0.1:8787']);
    // Stopped children are not reported as exits of their own.
    expect(seen.exits).toEqual([]);
  });

  it('reports a child that exits on its own, with its code', async () => {
    const { supervisor, seen, exited } = harness('process.exit(3)');
    const exit = exited();
    supervisor.start();
    await exit;
    expect(seen.exits).toEqual([[3, null]]);
    await supervisor.stop('SIGTERM'); // nothing left to stop: resolves at once
  });

  it('kills a child that ignores the stop signal once the grace is over', async () => {
    const { supervisor, seen, ready } = harness(`process.on('SIGTERM', () => {}); ${SERVER}`, 200);
    running = supervisor;
    const up = ready();
    supervisor.start();
    await up;
    const started = Date.now();
    await supervisor.stop('SIGTERM');
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    expect(seen.exits).toEqual([]);
  });
});
