/**
 * Which model `flue dev` (both targets) and `flue run` talk to: the real providers when a provider
 * key is configured where the app will read it, otherwise the offline model (offline-model.ts)
 * behind a scripted model server in the CLI's own process, reached through
 * FLUE_SCRIPTED_MODEL_URL. `--scripted` / `--real-model` force either way. Each command prints
 * one line saying which it chose and how to get the other.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parseEnv } from 'node:util';
import type { ScriptedModelServer } from '../testing/index.ts';
import { TOOL_FORM, offlineModel } from './offline-model.ts';

/** `auto`: scripted unless a provider key is configured; the flags force either way. */
export type ModelMode = 'auto' | 'scripted' | 'real';

/** Where the app reads its variables, and which command the notice names. */
export interface ModelHost {
  /** `wrangler`: `.dev.vars`, else `.env` (a Worker under `wrangler dev`); `node`: an env file and the process environment. */
  vars: 'wrangler' | 'node';
  command: 'dev' | 'run';
  /** The env file of a Node process, relative to the root (`flue run --env`); default `.env`. */
  envFile?: string;
}

export interface ModelChoice {
  scripted: boolean;
  /** The one line the command prints about the model. */
  notice: string;
}

/** Variables that hold a model provider's credentials (pi-ai's names: ANTHROPIC_API_KEY, …). */
const PROVIDER_KEY = /^[A-Z][A-Z0-9_]*_(?:API_KEY|OAUTH_TOKEN)$/;

const SCRIPTED_URL = 'FLUE_SCRIPTED_MODEL_URL';

/**
 * Scripted or real: a non-empty provider key among the variables the app will read means real,
 * unless a flag decides. A FLUE_SCRIPTED_MODEL_URL of the user's own is kept (neither is started).
 */
export function chooseModel(root: string, mode: ModelMode, host: ModelHost, env: NodeJS.ProcessEnv = process.env): ModelChoice {
  const vars = appVariables(root, host, env);
  const own = vars.find((source) => (source[SCRIPTED_URL] ?? '').trim() !== '')?.[SCRIPTED_URL];
  if (own !== undefined) return { scripted: false, notice: `[flue] Model: the scripted model server at ${own} (${SCRIPTED_URL}).` };
  const keys = providerKeys(vars);
  const hint = `${providerKeyNames(root)
    .map((name) => `${name}=…`)
    .join(' or ')} in ${keyPlace(host)}`;
  if (mode === 'real') {
    return {
      scripted: false,
      notice:
        keys.length > 0
          ? `[flue] Model: real (${keys.join(', ')}).`
          : `[flue] Model: real (--real-model), but no provider key is set: put ${hint}.`,
    };
  }
  if (mode === 'auto' && keys.length > 0) {
    return {
      scripted: false,
      notice: `[flue] Model: real (${keys.join(', ')}); \`flue ${host.command} --scripted\` serves the offline scripted model.`,
    };
  }
  return {
    scripted: true,
    notice:
      `[flue] Model: scripted, offline. It echoes your message; send \`${TOOL_FORM}\` to make it call that tool of the agent. ` +
      `For a real model put ${hint}${mode === 'scripted' ? ' and drop --scripted' : ''}, or pass --real-model.`,
  };
}

/**
 * Prints the choice and, when it is the offline model, starts its server (the caller closes it
 * and hands its URL to the app as FLUE_SCRIPTED_MODEL_URL).
 */
export async function serveModel(
  root: string,
  mode: ModelMode,
  host: ModelHost,
  stderr: (text: string) => void,
): Promise<ScriptedModelServer | undefined> {
  const choice = chooseModel(root, mode, host);
  stderr(`${choice.notice}\n`);
  if (!choice.scripted) return undefined;
  const { startScriptedModelServer } = await import('../testing/index.ts');
  return await startScriptedModelServer({ fallback: offlineModel });
}

function keyPlace(host: ModelHost): string {
  switch (host.vars) {
    case 'wrangler':
      return '.dev.vars';
    case 'node':
      return `${host.envFile ?? '.env'} or the environment`;
  }
}

/** The variable sets the app will see, in the order the host reads them. */
function appVariables(root: string, host: ModelHost, env: NodeJS.ProcessEnv): Record<string, string | undefined>[] {
  const sources: Record<string, string | undefined>[] = [];
  switch (host.vars) {
    case 'wrangler':
      for (const file of ['.dev.vars', '.env']) {
        const full = path.join(root, file);
        if (!existsSync(full)) continue;
        sources.push(parseEnv(readFileSync(full, 'utf8')));
        break; // wrangler reads .env only when there is no .dev.vars
      }
      // The process environment reaches the Worker only when wrangler is told to include it.
      if (env['CLOUDFLARE_INCLUDE_PROCESS_ENV'] === 'true') sources.push(env);
      break;
    case 'node': {
      // The shell wins over the file, as in `flue run` and `flue dev --target node`.
      sources.push(env);
      const full = path.resolve(root, host.envFile ?? '.env');
      if (existsSync(full)) sources.push(parseEnv(readFileSync(full, 'utf8')));
      break;
    }
  }
  return sources;
}

function providerKeys(sources: Record<string, string | undefined>[]): string[] {
  const found = new Set<string>();
  for (const vars of sources) {
    for (const [name, value] of Object.entries(vars)) if (PROVIDER_KEY.test(name) && (value ?? '').trim() !== '') found.add(name);
  }
  return [...found].sort();
}

/** The key variables of the providers the agents name in `useModel('<provider>/…')` (default anthropic). */
function providerKeyNames(root: string): string[] {
  const providers = new Set<string>();
  const visit = (dir: string) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) visit(file);
      else if (/\.[cm]?[jt]sx?$/.test(entry.name)) {
        for (const match of readFileSync(file, 'utf8').matchAll(/useModel\(\s*['"`]([a-z0-9-]+)\//g)) providers.add(match[1]!);
      }
    }
  };
  visit(path.join(root, 'src'));
  if (providers.size === 0) providers.add('anthropic');
  return [...providers].sort().map((id) => `${id.toUpperCase().replace(/-/g, '_')}_API_KEY`);
}
