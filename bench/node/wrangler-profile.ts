/**
 * Where a Flue Worker's CPU goes on `wrangler dev`: a CPU profile of the Worker's isolate, taken
 * through wrangler's inspector (the DevTools protocol's Profiler), while 200 one-turn
 * conversations run at once and then one conversation runs 20 turns. Prints self time by function
 * and by source (our runtime, pi-ai, hono, workerd built-ins), so the figures of wrangler-cpu.ts
 * point at their cause. Not part of `npm run bench`: run it when a figure needs explaining.
 *
 *   npm run bench:wrangler-profile            # the Flue project
 *   npm run bench:wrangler-profile -- bare    # the bare Worker + Durable Object, for comparison
 *   npm run bench:wrangler-profile -- turns   # only turns of long conversations (with or without `bare`)
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeDir, templateCopy } from '../../src/build/test-project.ts';
import { buildProject, freePort, startWranglerDev } from '../../test/support/wrangler-dev.ts';
import { startSideBySideServer } from './side-by-side-server.ts';
import { writeBenchProject } from './wrangler-cpu-project.ts';
import { withoutLocalTraceCollector } from './wrangler-processes.ts';
import { expectedReply, question } from './side-by-side-script.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const bare = process.argv.includes('bare');
/** `burst`: profile 250 concurrent sends to one conversation (three bursts) instead of the fan-out and 20 turns. */
const burst = process.argv.includes('burst');
/** `turns`: profile only turns of long conversations (three of 20 turns), the per-turn figure's scenario. */
const turnsOnly = process.argv.includes('turns');
// Every side's workerd runs its Worker alone, as on Cloudflare (wrangler-processes.ts).
withoutLocalTraceCollector();
const server = await startSideBySideServer();
const project = templateCopy('bench-wrangler-profile');
writeBenchProject(project);
if (!bare) buildProject(project);
const inspectorPort = await freePort();
const inspect = ['--inspector-port', String(inspectorPort)];
const dev = bare
  ? await startWranglerDev(
      fileURLToPath(new URL('../workers/bare-turns/', import.meta.url)),
      { MODEL_URL: server.url },
      90_000,
      'wrangler.jsonc',
      // No objects from an earlier run (the same names would carry on with their histories).
      [...inspect, '--persist-to', path.join(project, '.state-bare')],
    )
  : await startWranglerDev(project, { FLUE_SCRIPTED_MODEL_URL: server.url }, 90_000, '.flue.wrangler.json', inspect);

async function turn(conversation: string, key: string): Promise<void> {
  const response = await fetch(`${dev.base}/turn/${conversation}`, { method: 'POST', body: question(key) });
  const body = (await response.json()) as { reply?: string };
  if (body.reply !== expectedReply(key)) throw new Error(`turn ${conversation} answered ${JSON.stringify(body).slice(0, 300)}`);
}

try {
  for (let t = 1; t <= 3; t++) await turn('warmup', `warmup-${t}`);
  // The figures these profiles explain run with the storage meters paused (wrangler-cpu.ts): so do the profiles.
  const paused = await fetch(`${dev.base}/meter/pause`, { method: 'POST' });
  if (paused.status !== 204) throw new Error(`/meter/pause answered ${paused.status}`);
  const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json`)).json()) as {
    webSocketDebuggerUrl: string;
    title?: string;
  }[];
  // wrangler's inspector proxy accepts DevTools connections from local origins only.
  const socket = new WebSocket(targets[0]!.webSocketDebuggerUrl, { headers: { origin: 'http://localhost' } } as unknown as string[]);
  await new Promise((resolve, reject) => {
    socket.addEventListener('open', resolve, { once: true });
    socket.addEventListener('error', reject, { once: true });
  });
  let nextId = 1;
  const pending = new Map<number, (result: unknown) => void>();
  socket.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown };
    if (message.id !== undefined) pending.get(message.id)?.(message.result);
  });
  const send = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<unknown>((resolve) => {
      const id = nextId++;
      pending.set(id, resolve);
      socket.send(JSON.stringify({ id, method, params }));
    });
  await send('Profiler.enable');
  await send('Profiler.setSamplingInterval', { interval: 200 });
  await send('Profiler.start');
  const t0 = performance.now();
  if (burst) {
    // Joined sends answer with several scripted replies in a row: only the status is checked here.
    const send = (key: string) => fetch(`${dev.base}/turn/burst`, { method: 'POST', body: question(key) }).then((r) => r.text());
    await turn('burst', 'burst-warm');
    for (let b = 0; b < 3; b++) await Promise.all(Array.from({ length: 250 }, (_, i) => send(`burst-${b}-${i}`)));
  } else if (turnsOnly) {
    for (let c = 0; c < 3; c++) for (let t = 1; t <= 20; t++) await turn(`long-${c}`, `long-${c}-${t}`);
  } else {
    await Promise.all(Array.from({ length: 200 }, (_, c) => turn(`fan-${c}`, `fan-${c}`)));
  }
  const wall = performance.now() - t0;
  if (!burst && !turnsOnly) for (let t = 1; t <= 20; t++) await turn('long', `long-${t}`);
  const { profile } = (await send('Profiler.stop')) as { profile: Profile };
  socket.close();
  const name = `wrangler-profile-${bare ? 'bare' : 'ours'}${burst ? '-burst' : turnsOnly ? '-turns' : ''}`;
  writeFileSync(path.join(process.cwd(), `bench/.results/${name}.cpuprofile`), JSON.stringify(profile));
  console.log(
    burst
      ? `3 bursts of 250 sends: ${wall.toFixed(0)} ms wall (profiling on)`
      : turnsOnly
        ? `3 conversations of 20 turns: ${wall.toFixed(0)} ms wall (profiling on)`
        : `200 conversations at once: ${wall.toFixed(0)} ms wall (profiling on)`,
  );

  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const source = (url: string, name: string): string => {
    if (name === '(idle)' || name === '(program)' || name === '(garbage collector)') return name;
    if (url === '') return '(native / built-in)';
    if (/pi-ai/.test(url)) return 'pi-ai';
    if (/hono/.test(url)) return 'hono';
    if (/valibot|json-schema/.test(url)) return 'valibot / json-schema';
    return url.replace(/^.*\//, '');
  };
  const bySource = new Map<string, number>();
  const byFunction = new Map<string, number>();
  for (const [id, ms] of self) {
    const { url, functionName, lineNumber } = byId.get(id)!.callFrame;
    const group = source(url, functionName);
    bySource.set(group, (bySource.get(group) ?? 0) + ms);
    const key = `${functionName || '(anonymous)'} ${url.replace(/^.*\//, '')}:${lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + ms);
  }
  const top = (map: Map<string, number>, n: number) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, ms]) => `  ${ms.toFixed(0).padStart(7)} ms ${((100 * ms) / total).toFixed(1).padStart(5)}%  ${name}`)
      .join('\n');
  console.log(
    `profile: ${total.toFixed(0)} ms sampled\nself time by source:\n${top(bySource, 15)}\nself time by function:\n${top(byFunction, 40)}`,
  );
} finally {
  await dev.stop();
  await server.close();
  removeDir(project);
}
