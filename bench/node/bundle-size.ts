/**
 * Worker bundle size: the one-agent template built by `flue build` without configuration (the
 * provider comes from the agent's literal model id), next to a Worker that holds nothing but that
 * provider's pi-ai code.
 *
 *   npm run bench:bundle
 *
 * Both bundles go through the same esbuild settings (`workerBuildOptions`: browser platform,
 * workerd conditions, Node built-ins external), unminified and minified; sizes are gzip level 9
 * of the bundle bytes. The baseline Worker (provider-alone.ts) registers the provider, streams one
 * reply and returns its text: the least code a Worker that talks to that model through pi-ai must
 * ship. The difference is what the framework adds: the engine, the router, MCP, valibot, hono.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';
import { build } from '../../src/build/build.ts';
import { removeDir, templateCopy } from '../../src/build/test-project.ts';
import { type BenchRow, saveRows } from '../results.ts';
import { buildProviderAlone, factoryName, workerBundleOptions } from './provider-alone.ts';

const PROVIDER = process.env.BENCH_PROVIDER ?? 'anthropic';
// Targets: at most this much gzip more than the provider alone, unminified and minified.
const MARGIN_KB = { unminified: 45, minified: 30 };
const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;
const kb = (bytes: number) => bytes / 1000;

interface Size {
  bytes: number;
  gzip: number;
  /** Output bytes per top-level package (node_modules/<pkg> or src/…), largest first. */
  parts: [string, number][];
  /** Output bytes per input module, largest first. */
  modules: [string, number][];
}

/** `node_modules/<pkg>` (however many `../` lead there), or the runtime folder of our own sources. */
function partOf(input: string): string {
  const own = input.match(/(?:^|\/)src\/([^/]+)/);
  if (own && !input.includes('node_modules/')) return `@flue/runtime src/${own[1]}`;
  // The package's per-file Worker modules: grouped by source folder, like the sources.
  const built = input.match(/(?:^|\/)dist\/modules\/([^/]+)/);
  if (built) return `@flue/runtime src/${built[1]}`;
  const bare = input.replace(/^(?:\.\.\/)+/, '').replace(/^.*node_modules\//, '');
  return bare.match(/^((?:@[^/]+\/)?[^/]+)\//)?.[1] ?? input;
}

/** `files`: the modules a Worker uploads (ours: `worker.js` and its chunks); gzip is summed over them. */
function sizeOf(files: Uint8Array | Uint8Array[], metafile: esbuild.Metafile | undefined): Size {
  const uploaded = Array.isArray(files) ? files : [files];
  const parts = new Map<string, number>();
  const modules = new Map<string, number>();
  for (const output of Object.values(metafile?.outputs ?? {})) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      if (input.startsWith('flue-unreached:')) continue;
      const pkg = partOf(input);
      parts.set(pkg, (parts.get(pkg) ?? 0) + bytesInOutput);
      const module = input.replace(/^(?:\.\.\/)+/, '').replace(/^.*node_modules\//, '');
      modules.set(module, (modules.get(module) ?? 0) + bytesInOutput);
    }
  }
  const sorted = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1]);
  const bytes = uploaded.reduce((sum, file) => sum + file.byteLength, 0);
  const gzip = uploaded.reduce((sum, file) => sum + gzipSync(file, { level: 9 }).byteLength, 0);
  return { bytes, gzip, parts: sorted(parts), modules: sorted(modules) };
}

/**
 * The template as a user gets it: one agent, no flue.config.ts. The build infers the provider from
 * the agent's `useModel('anthropic/…')`; another BENCH_PROVIDER is written into that call.
 */
async function flueBundle(minify: boolean): Promise<Size> {
  const dir = templateCopy('bench-bundle');
  try {
    const agent = path.join(dir, 'src', 'agents', 'hello.ts');
    if (PROVIDER !== 'anthropic')
      writeFileSync(agent, readFileSync(agent, 'utf8').replace("'anthropic/claude-haiku-4-5'", `'${PROVIDER}/any-model'`));
    const result = await build({ root: dir, minify, log: () => {} });
    // `providers: async () => [(await import('…/providers/<id>')).<factory>(), …]` (loaded on first use).
    const list = result.entrySource.match(/providers: async \(\) => \[(.*)\]/)?.[1];
    const included = list === undefined ? undefined : [...list.matchAll(/\)\.(\w+)\(\)/g)].map((match) => match[1]).join(', ');
    if (included !== factoryName(PROVIDER)) {
      throw new Error(`the unconfigured template should bundle only ${PROVIDER}, got: ${included}`);
    }
    // Every module uploaded: the split Worker's chunks count as Cloudflare counts them.
    return sizeOf(
      [result.outputs.worker, ...result.outputs.chunks].map((file) => readFileSync(file)),
      result.metafile,
    );
  } finally {
    removeDir(dir);
  }
}

/** A Worker with only the provider (provider-alone.ts). */
async function providerAlone(minify: boolean): Promise<Size> {
  const out = await buildProviderAlone(PROVIDER, minify);
  return sizeOf(out.outputFiles[0]!.contents, out.metafile);
}

/**
 * The same one-tool chat agent on the Cloudflare Agents SDK (bench/agents-sdk/bundle-entry.ts:
 * the `AIChatAgent` class and `routeAgentRequest`), through the same esbuild settings.
 */
async function agentsSdk(minify: boolean): Promise<Size> {
  const options = workerBundleOptions(minify);
  // Its dependencies import Node built-ins without `node:`, which nodejs_compat serves (as wrangler does, leave them external).
  const external = [...options.external, ...builtinModules];
  const out = await esbuild.build({
    entryPoints: [fileURLToPath(new URL('../agents-sdk/bundle-entry.ts', import.meta.url))],
    ...options,
    external,
  });
  return sizeOf(out.outputFiles[0]!.contents, out.metafile);
}

const installed = spawnSync(process.execPath, [fileURLToPath(new URL('../agents-sdk/ensure-installed.mjs', import.meta.url))], {
  stdio: 'inherit',
});
if (installed.status !== 0) process.exit(installed.status ?? 1);

const rows: BenchRow[] = [];
const agentsRows: BenchRow[] = [];
const detail: string[] = [];
for (const minify of [false, true]) {
  const [ours, alone, agents] = [await flueBundle(minify), await providerAlone(minify), await agentsSdk(minify)];
  agentsRows.push({
    figure: `Worker bundle, one-tool agent, gzip${minify ? ', minified' : ''}`,
    ours: kib(ours.gzip),
    baseline: kib(agents.gzip),
    note: 'Agents SDK 0.32 + ai-chat 0.12 + AI SDK 7; ours is the whole template (Hono app, Workflow)',
    ratio: `${(ours.gzip / agents.gzip).toFixed(2)}×`,
    target: '< 1× (ahead)',
    met: ours.gzip < agents.gzip,
  });
  detail.push(
    `${minify ? 'minified' : 'unminified'}: Agents SDK ${kib(agents.bytes)} (${kib(agents.gzip)} gzip); largest parts: ${agents.parts
      .slice(0, 8)
      .map(([part, bytes]) => `${part} ${kib(bytes)}`)
      .join(', ')}`,
  );
  const extra = ours.gzip - alone.gzip;
  rows.push({
    figure: `Worker bundle, template with one agent, no config (${PROVIDER} inferred), gzip${minify ? ', minified' : ''}`,
    ours: kib(ours.gzip),
    baseline: kib(alone.gzip),
    note: `${PROVIDER}'s pi-ai code alone`,
    ratio: `+${kb(extra).toFixed(0)} KB`,
    target: `≤ +${MARGIN_KB[minify ? 'minified' : 'unminified']} KB`,
    met: kb(extra) <= MARGIN_KB[minify ? 'minified' : 'unminified'],
  });
  const theirs = new Map(alone.parts);
  detail.push(
    `${minify ? 'minified' : 'unminified'}: ours ${kib(ours.bytes)} (${kib(ours.gzip)} gzip), provider alone ${kib(alone.bytes)} (${kib(alone.gzip)} gzip)`,
  );
  detail.push('  largest parts of ours not in the baseline (output bytes before gzip):');
  for (const [part, bytes] of ours.parts.filter(([part]) => !theirs.has(part)).slice(0, 12))
    detail.push(`    ${kib(bytes).padStart(8)}  ${part}`);
  // Run with `node --conditions=flue-source` to see our runtime by source file instead of dist chunk.
  const theirModules = new Map(alone.modules);
  detail.push('  largest modules of ours not in the baseline:');
  for (const [module, bytes] of ours.modules.filter(([module]) => !theirModules.has(module)).slice(0, 25)) {
    detail.push(`    ${(bytes / 1024).toFixed(1).padStart(6)} KiB  ${module}`);
  }
}

const method = 'Node, esbuild with the Worker build settings, gzip -9 of the bundle';
saveRows('bundle-size', method, rows);
saveRows('agents-sdk-bundle', method, agentsRows);
console.log(`Bundle size (${method})`);
for (const row of [...rows, ...agentsRows])
  console.log(`  ${row.figure}: ${row.ours} vs ${row.baseline} → ${row.ratio} (target ${row.target}) ${row.met ? 'met' : 'NOT met'}`);
console.log(detail.join('\n'));
