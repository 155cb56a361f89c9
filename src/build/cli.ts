/**
 * The `flue` CLI (build-and-cli.md §5): `init`, `dev`, `build`, `deploy`, `run`.
 * Primary payload on stdout; progress, streaming and errors on stderr.
 * Exit codes: 0 success · 1 failure or usage error · 130 SIGINT · 143 SIGTERM.
 *
 * Commands load their modules when they run: `init` (and help, version) must also work on an
 * older system Node, which cannot even load the build (it uses Node 22 APIs).
 */
import path from 'node:path';
import { describeBuildError } from './build-errors.ts';
import { type OptionSpecs, UsageError, hintFor, parseCommandArgs } from './cli-args.ts';
import { DEFAULT_TEMPLATE, availableTemplates, initProject } from './cli-init.ts';
import type { BuildTarget } from './config.ts';
import type { ModelMode } from './model-choice.ts';
import { packageVersion } from './package-root.ts';
import { TOOL_FORM } from './offline-model.ts';
import { GENERATED_CONFIG_FILE } from './wrangler-config.ts';
import { spawnWrangler } from './wrangler-bin.ts';

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  cwd: string;
}

const COMMANDS = ['init', 'dev', 'build', 'deploy', 'run'] as const;
type Command = (typeof COMMANDS)[number];

const HELP_OPTION = { help: { type: 'boolean', short: 'h' } } as const satisfies OptionSpecs;

const GLOBAL_USAGE = `Usage: flue <command> [options]

Commands:
  init [directory]        Create a project from a template
  dev                     Build, run wrangler dev (or the Node server), rebuild on change
  build                   Build the Worker (or, with --target node, the Node server)
  deploy                  Build, then wrangler deploy
  run <path> -m <text>    Send one message to an agent in this Node process

Without a provider key (e.g. ANTHROPIC_API_KEY), dev and run use an offline model that echoes;
send it the message ${TOOL_FORM} to watch it call that tool of your agent.

Options:
  -h, --help              Show help (also: flue <command> --help)
  -v, --version           Show the version
`;

const USAGE: Record<Command, string> = {
  init: `Usage: flue init [directory] [--template <name>] [--force] [--runtime <spec>]

Copies a project template into <directory> (default: the current directory).
Existing files are kept unless --force. Prints each written path on stdout.
The project depends on "@flue/runtime": "npm:flue-workers@^<version>"; run from a checkout
of flue-workers, init packs the checkout into <directory>/vendor/ and depends on that.

Options:
  --template <name>   Template to copy (default: ${DEFAULT_TEMPLATE})
  --force             Overwrite existing files
  --runtime <spec>    The @flue/runtime dependency to write instead (an npm spec)
  -h, --help          Show help
`,
  dev: `Usage: flue dev [--target <cloudflare|node>] [--port <n>] [--scripted | --real-model] [-- <wrangler dev args>]

Builds, then runs wrangler dev on ${GENERATED_CONFIG_FILE} (127.0.0.1). Rebuilds when src/,
the wrangler file or flue.config.* change. Prints the local URL on stdout.
With --target node: runs dist/server.mjs instead and rebuilds and restarts it on change.

Offline model: without a provider key (e.g. ANTHROPIC_API_KEY) in .dev.vars (Node: .env or
the environment), every model is a scripted local one, so the app runs offline. It echoes
your message; the message ${TOOL_FORM} makes it call that tool
of your agent (arguments optional) and answer with what the tool returned.

Options:
  --target <name>     cloudflare (default) or node; overrides flue.config "target"
  --port <n>          Port for wrangler dev or the Node server
  --scripted          Serve the offline model even when a provider key is set
  --real-model        Call the real provider even without a key
  -h, --help          Show help
`,
  build: `Usage: flue build [--target <cloudflare|node>] [--minify] [--json]

Cloudflare: writes dist/worker.js and dist/chunks/*.js (+ .map), dist/entry.generated.mjs, dist/flue-manifest.json,
${GENERATED_CONFIG_FILE} and .wrangler/deploy/config.json.
Node: writes dist/server.mjs (+ .map), dist/server.entry.generated.mjs and dist/flue-manifest.json;
run it with node dist/server.mjs.

Options:
  --target <name>     cloudflare (default) or node; overrides flue.config "target"
  --minify            Minify the bundle
  --json              Print dist/flue-manifest.json on stdout
  -h, --help          Show help
`,
  deploy: `Usage: flue deploy [--dry-run] [-- <wrangler deploy args>]

Builds, then runs wrangler deploy --config ${GENERATED_CONFIG_FILE}. Exits with wrangler's code.

Options:
  --dry-run           Pass --dry-run to wrangler (no upload)
  -h, --help          Show help
`,
  run: `Usage: flue run <path> -m|--message <text> [--name <agent>] [--id <id>] [--data <json>]
                [--uid <uid> | --new] [--env <path>] [--scripted | --real-model] [--json]

Runs one message through an agent module in this Node process: streamed text and tool
activity on stderr, the reply on stdout.

Offline model: without a provider key (e.g. ANTHROPIC_API_KEY) in .env or the environment,
every model is a scripted local one. It echoes your message; the message
${TOOL_FORM} makes it call that tool of your agent (arguments
optional) and answer with what the tool returned, e.g.
  flue run src/agents/hello.ts -m '/tool current_time {"timeZone":"Asia/Tokyo"}'

Options:
  -m, --message <text>  The user message (required)
  --name <agent>        The agent to run when the module defines several
  --id <id>             Conversation id to create or continue (default: a new one)
  --data <json>         initialData, used only when this run creates the instance
  --uid <uid>           Continue only that incarnation
  --new                 Create only (fails if the id exists)
  --env <path>          Load this .env file instead of the project's .env
  --scripted            Use the offline model even when a provider key is set
  --real-model          Call the real provider even without a key
  --json                Print one JSON result object on stdout
  -h, --help            Show help
`,
};

function defaultIo(): CliIo {
  return {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
    cwd: process.cwd(),
  };
}

/** Runs the CLI; resolves to the exit code. */
export async function main(argv: readonly string[], io: CliIo = defaultIo()): Promise<number> {
  try {
    return await dispatchCommand(argv, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`flue: ${error.message}\n${hintFor(error.command)}\n`);
      return 1;
    }
    io.stderr(`${describeBuildError(error)}\n`);
    return 1;
  }
}

async function dispatchCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined) {
    io.stderr(GLOBAL_USAGE);
    return 1;
  }
  if (first === '--help' || first === '-h') {
    if (rest.length > 0) throw new UsageError(`Unexpected argument "${rest[0]}".`);
    io.stdout(GLOBAL_USAGE);
    return 0;
  }
  if (first === '--version' || first === '-v') {
    if (rest.length > 0) throw new UsageError(`Unexpected argument "${rest[0]}".`);
    io.stdout(`${packageVersion()}\n`);
    return 0;
  }
  if (first.startsWith('-')) throw new UsageError(`Unknown option ${first}.`);
  if (!(COMMANDS as readonly string[]).includes(first)) throw new UsageError(`Unknown command "${first}".`);
  const command = first as Command;
  switch (command) {
    case 'init':
      return initCommand(rest, io);
    case 'build':
      return buildCommand(rest, io);
    case 'dev':
      return devCommandCli(rest, io);
    case 'deploy':
      return deployCommand(rest, io);
    case 'run':
      return runCommandCli(rest, io);
  }
}

function wantsHelp(command: Command, values: { help?: boolean }, io: CliIo): boolean {
  if (values.help !== true) return false;
  io.stdout(USAGE[command]);
  return true;
}

async function initCommand(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    'init',
    args,
    { ...HELP_OPTION, template: { type: 'string' }, force: { type: 'boolean' }, runtime: { type: 'string' } },
    { maxPositionals: 1 },
  );
  if (wantsHelp('init', values, io)) return 0;
  if (values.template !== undefined && !availableTemplates().includes(values.template)) {
    throw new UsageError(`Unknown template "${values.template}". Available templates: ${availableTemplates().join(', ')}.`, 'init');
  }
  const result = await initProject({
    directory: positionals[0] ?? '.',
    ...(values.template === undefined ? {} : { template: values.template }),
    force: values.force === true,
    ...(values.runtime === undefined ? {} : { runtime: values.runtime }),
    cwd: io.cwd,
    onWritten: (p) => io.stdout(`${p}\n`),
    onNote: (line) => io.stderr(`${line}\n`),
  });
  io.stderr(
    `[flue] ${result.written.length} file${result.written.length === 1 ? '' : 's'} written for "${result.projectName}"` +
      (result.kept.length > 0 ? `, ${result.kept.length} kept (use --force to overwrite)` : '') +
      '.\n',
  );
  const where = path.relative(io.cwd, result.directory);
  io.stderr(
    `[flue] Next: ${where === '' ? '' : `cd ${where.includes(' ') ? JSON.stringify(where) : where} && `}npm install && npm run dev\n`,
  );
  return 0;
}

/** `--target` wins over the config's `target`; the default is Cloudflare. */
async function resolveTarget(command: Command, flag: string | undefined, root: string): Promise<BuildTarget> {
  // Loaded here, not at the top: the config loader brings esbuild, which `flue init` never needs.
  const { BUILD_TARGETS, loadConfig } = await import('./config.ts');
  if (flag !== undefined) {
    if (!(BUILD_TARGETS as readonly string[]).includes(flag)) {
      throw new UsageError(`--target must be one of ${BUILD_TARGETS.join(', ')}; got "${flag}".`, command);
    }
    return flag as BuildTarget;
  }
  return (await loadConfig(root)).target ?? 'cloudflare';
}

async function buildCommand(args: readonly string[], io: CliIo): Promise<number> {
  const { values } = parseCommandArgs(
    'build',
    args,
    { ...HELP_OPTION, target: { type: 'string' }, minify: { type: 'boolean' }, json: { type: 'boolean' } },
    { maxPositionals: 0 },
  );
  if (wantsHelp('build', values, io)) return 0;
  if ((await resolveTarget('build', values.target, io.cwd)) === 'node') {
    const { buildNodeServer } = await import('./node-build.ts');
    const result = await buildNodeServer({ root: io.cwd, minify: values.minify === true, log: (line) => io.stderr(`${line}\n`) });
    if (values.json === true) io.stdout(`${JSON.stringify(result.manifest, null, 2)}\n`);
    return 0;
  }
  const { build } = await import('./build.ts');
  const result = await build({ root: io.cwd, minify: values.minify === true, log: (line) => io.stderr(`${line}\n`) });
  if (values.json === true) io.stdout(`${JSON.stringify(result.manifest, null, 2)}\n`);
  return 0;
}

function validPort(port: string): boolean {
  return /^\d+$/.test(port) && Number(port) >= 1 && Number(port) <= 65535;
}

const MODEL_OPTIONS = { scripted: { type: 'boolean' }, 'real-model': { type: 'boolean' } } as const satisfies OptionSpecs;

function checkModelFlags(command: Command, values: { scripted?: boolean; 'real-model'?: boolean }): void {
  if (values.scripted === true && values['real-model'] === true)
    throw new UsageError('--scripted cannot be combined with --real-model.', command);
}

function modelMode(values: { scripted?: boolean; 'real-model'?: boolean }): ModelMode {
  return values.scripted === true ? 'scripted' : values['real-model'] === true ? 'real' : 'auto';
}

async function devCommandCli(args: readonly string[], io: CliIo): Promise<number> {
  const { values, passthrough } = parseCommandArgs(
    'dev',
    args,
    { ...HELP_OPTION, ...MODEL_OPTIONS, target: { type: 'string' }, port: { type: 'string' } },
    { maxPositionals: 0, passthrough: true },
  );
  if (wantsHelp('dev', values, io)) return 0;
  if (values.port !== undefined && !validPort(values.port))
    throw new UsageError(`--port must be a port number (1-65535); got "${values.port}".`, 'dev');
  checkModelFlags('dev', values);
  if ((await resolveTarget('dev', values.target, io.cwd)) === 'node') {
    if (passthrough.length > 0) throw new UsageError('Arguments after -- go to wrangler; the Node target takes none.', 'dev');
    const { devNodeCommand } = await import('./cli-dev-node.ts');
    return devNodeCommand({
      root: io.cwd,
      model: modelMode(values),
      ...(values.port === undefined ? {} : { port: values.port }),
      stdout: io.stdout,
      stderr: io.stderr,
    });
  }
  const { devCommand } = await import('./cli-dev.ts');
  return devCommand({
    root: io.cwd,
    model: modelMode(values),
    ...(values.port === undefined ? {} : { port: values.port }),
    wranglerArgs: passthrough,
    stdout: io.stdout,
    stderr: io.stderr,
  });
}

async function deployCommand(args: readonly string[], io: CliIo): Promise<number> {
  const { values, passthrough } = parseCommandArgs(
    'deploy',
    args,
    { ...HELP_OPTION, 'dry-run': { type: 'boolean' } },
    { maxPositionals: 0, passthrough: true },
  );
  if (wantsHelp('deploy', values, io)) return 0;
  const { loadConfig } = await import('./config.ts');
  if ((await loadConfig(io.cwd)).target === 'node') {
    throw new UsageError(
      "`flue deploy` deploys a Cloudflare Worker, but flue.config sets target 'node'. Build the Node server with `flue build` and run `node dist/server.mjs` on your host.",
      'deploy',
    );
  }
  const { build } = await import('./build.ts');
  await build({ root: io.cwd, log: (line) => io.stderr(`${line}\n`) });
  const wranglerArgs = ['deploy', '--config', GENERATED_CONFIG_FILE, ...(values['dry-run'] === true ? ['--dry-run'] : []), ...passthrough];
  return await new Promise<number>((resolve, reject) => {
    const child = spawnWrangler(io.cwd, wranglerArgs, { stdio: ['inherit', 'pipe', 'pipe'] });
    child.stdout?.on('data', (data: Buffer) => io.stderr(data.toString('utf8')));
    child.stderr?.on('data', (data: Buffer) => io.stderr(data.toString('utf8')));
    const forward = (signal: NodeJS.Signals) => child.kill(signal);
    process.on('SIGINT', forward);
    process.on('SIGTERM', forward);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      process.off('SIGINT', forward);
      process.off('SIGTERM', forward);
      resolve(code ?? (signal === 'SIGINT' ? 130 : signal === 'SIGTERM' ? 143 : 1));
    });
  });
}

async function runCommandCli(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    'run',
    args,
    {
      ...HELP_OPTION,
      message: { type: 'string', short: 'm' },
      name: { type: 'string' },
      id: { type: 'string' },
      data: { type: 'string' },
      uid: { type: 'string' },
      new: { type: 'boolean' },
      env: { type: 'string' },
      json: { type: 'boolean' },
      ...MODEL_OPTIONS,
    },
    { maxPositionals: 1 },
  );
  if (wantsHelp('run', values, io)) return 0;
  const modulePath = positionals[0];
  if (modulePath === undefined) throw new UsageError('`flue run` requires a module path: flue run <path> --message <text>.', 'run');
  if (values.message === undefined) throw new UsageError('`flue run` requires --message <text>.', 'run');
  checkModelFlags('run', values);
  if (values.uid !== undefined && values.new === true) throw new UsageError('--uid cannot be combined with --new.', 'run');
  if (values.uid !== undefined && values.data !== undefined)
    throw new UsageError('--uid cannot be combined with --data (initialData applies only when a run creates the instance).', 'run');
  let data: unknown;
  if (values.data !== undefined) {
    try {
      data = JSON.parse(values.data);
    } catch {
      throw new UsageError(`--data must be valid JSON, e.g. --data '{"issue": 17307}'.`, 'run');
    }
  }
  const { runCommand } = await import('./cli-run.ts');
  return runCommand({
    path: modulePath,
    message: values.message,
    ...(values.name === undefined ? {} : { name: values.name }),
    ...(values.id === undefined ? {} : { id: values.id }),
    ...(values.data === undefined ? {} : { data }),
    ...(values.uid === undefined ? {} : { uid: values.uid }),
    createOnly: values.new === true,
    ...(values.env === undefined ? {} : { envFile: values.env }),
    model: modelMode(values),
    json: values.json === true,
    cwd: io.cwd,
    stdout: io.stdout,
    stderr: io.stderr,
  });
}
