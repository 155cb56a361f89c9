/**
 * Config `providers` → the pi-ai provider factories the generated entry imports
 * (build-and-cli.md §3.2, §4), added to those the source's literal model ids name (model-providers.ts).
 */
import { FlueBuildError } from './build-errors.ts';

export const PI_AI = '@earendil-works/pi-ai';

export interface ProviderImport {
  id: string;
  /** e.g. `@earendil-works/pi-ai/providers/anthropic` */
  specifier: string;
  /** e.g. `anthropicProvider` */
  exportName: string;
  /**
   * The API module the provider streams through, called directly once loaded, e.g.
   * `@earendil-works/pi-ai/api/anthropic-messages`: set by both builds for the entry they generate
   * (provider-apis.ts `withDirectApis`), absent when the provider wraps its API.
   */
  api?: string;
}

/** `cloudflare-ai-gateway` → `cloudflareaigatewayprovider`, compared case-insensitively. */
function factoryKey(id: string): string {
  return `${id.replace(/-/g, '')}provider`;
}

/** `@earendil-works/pi-ai/providers/<id>` and its factory, or undefined when pi-ai has no such provider. */
export async function resolveProvider(id: string): Promise<ProviderImport | undefined> {
  const specifier = `${PI_AI}/providers/${id}`;
  let mod: Record<string, unknown>;
  try {
    mod = (await import(specifier)) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const exportName = Object.keys(mod).find((name) => name.toLowerCase() === factoryKey(id) && typeof mod[name] === 'function');
  return exportName === undefined ? undefined : { id, specifier, exportName };
}

/**
 * Resolves each id to `@earendil-works/pi-ai/providers/<id>` and its `<camelId>Provider` factory,
 * by loading the module (from this package's own pi-ai, the copy the runtime uses).
 */
export async function resolveProviders(ids: readonly string[], configLabel = 'flue.config'): Promise<ProviderImport[]> {
  const out: ProviderImport[] = [];
  for (const id of ids) {
    // The Workers AI binding provider is not a pi-ai module: the Worker registers it itself when
    // it has an `AI` binding (configureFlueWorker), so listing it only keeps it from being an error.
    if (id === 'cloudflare') continue;
    const resolved = await resolveProvider(id);
    if (resolved === undefined) {
      const specifier = `${PI_AI}/providers/${id}`;
      throw new FlueBuildError(
        'ConfigError',
        `Invalid config in ${configLabel}:\n  - "providers": unknown provider "${id}" (no ${specifier} module with a provider factory). ` +
          'Use pi-ai provider ids such as "anthropic", "openai", "google".',
      );
    }
    out.push(resolved);
  }
  return out;
}

/**
 * Whether the Worker bundles the Workers AI provider (`cloudflare/` models on the `AI` binding):
 * when the source names a `cloudflare/` model literally, the config lists "cloudflare", the
 * wrangler config binds Workers AI, or a model id computed at run time (with no configured
 * providers) might name one. Otherwise no agent can reach it and its code stays out.
 */
export function needsWorkersAI(options: {
  inferred: readonly string[];
  configured: readonly string[] | undefined;
  computedSites: number;
  wranglerHasAI: boolean;
}): boolean {
  if (options.inferred.includes('cloudflare') || options.wranglerHasAI) return true;
  if (options.configured !== undefined) return options.configured.includes('cloudflare');
  return options.computedSites > 0;
}
