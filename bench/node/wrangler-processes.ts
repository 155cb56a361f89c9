/** The processes of a running `wrangler dev`, found through /proc (Linux), and what runs in them. */
import { readFileSync, readdirSync } from 'node:fs';

/**
 * Keeps wrangler's local trace collector out of the Workers this process starts. `wrangler dev`
 * (4.x) attaches it to every Worker it serves, whatever the Worker's config says: each
 * invocation's spans (one per SQL statement, RPC call, subrequest and alarm call) are sent to a
 * Durable Object of wrangler's own that writes them to SQLite, in the same workerd process as the
 * Worker. A deployed Worker has no such collector, so a figure measured with it counts wrangler's
 * work per span on top of the Worker's own (bench/README.md). Call it before starting any Worker.
 */
export function withoutLocalTraceCollector(): void {
  process.env.X_LOCAL_OBSERVABILITY = 'false';
}

/**
 * The processes of one `wrangler dev` (its process group): the workerd that runs the Worker (the
 * one with an inspector port, found by that flag also when a wrapper such as valgrind runs it:
 * wrangler-instructions.ts), the workerd of wrangler's own proxy Worker (which owns the public
 * port and forwards every request), and wrangler's Node processes.
 */
export function processesOf(group: number): { worker: number; proxy: number[]; wrangler: number[] } {
  let worker: number | undefined;
  const proxy: number[] = [];
  const wrangler: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
      if (pgrp !== group) continue;
      if (comm === 'node') {
        wrangler.push(Number(entry));
        continue;
      }
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (args.some((arg) => arg.startsWith('--inspector-addr'))) worker = Number(entry);
      else if (comm === 'workerd') proxy.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  if (worker === undefined) throw new Error(`no workerd with an inspector in process group ${group}`);
  return { worker, proxy, wrangler };
}

/**
 * CPU time of a process in ms at nanosecond resolution: the sum of its threads' time on CPU
 * (`/proc/<pid>/task/<tid>/schedstat`, first field). Threads that exited are not in it; the
 * run's total is cross-checked against `/proc/<pid>/stat` (which keeps them, at 10 ms ticks).
 */
export function cpuMs(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread exited meanwhile
    }
  }
  return ns / 1e6;
}
