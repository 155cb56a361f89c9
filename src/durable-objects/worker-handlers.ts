/**
 * The Worker's default export: `fetch` from the app, every other handler from `src/cloudflare.ts`
 * (cloudflare.md §7), and `scheduled` from either: an app default-exported as `{ fetch, scheduled }`
 * keeps its cron callback beside its routes, as it does on the Node server. A typed error escaping
 * the app renders with its own status and envelope. Under `flue dev` (its status URL among the
 * vars) the error envelope names any escaping error and its src/ location, and responses say when
 * the latest build was rejected (host/dev-status.ts).
 */
import { FlueHttpError } from '../runtime/common/errors.ts';
import { isDevMode } from '../runtime/common/dev-mode.ts';
import { renderError } from '../runtime/http/http-errors.ts';
import { devStatusUrl, fetchBuildError, loadDevSourceMap, withBuildErrorHeader } from '../runtime/host/dev-status.ts';
import { assertFetchable } from '../runtime/host/app-entry.ts';

export function createFlueWorkerHandlers(options: {
  app: unknown;
  cloudflare?: Record<string, unknown>;
  generatedExports: readonly string[];
}): Record<string, unknown> {
  const app = options.app;
  assertFetchable(app);
  const handlers = options.cloudflare?.default;
  if (handlers !== undefined && (typeof handlers !== 'object' || handlers === null || Array.isArray(handlers))) {
    throw new Error('[flue] cloudflare.ts default export must be an object containing non-HTTP Worker handlers.');
  }
  if (handlers !== undefined && 'fetch' in handlers) {
    throw new Error('[flue] cloudflare.ts default export must not define fetch. Use app.ts for custom HTTP handling.');
  }
  for (const name of Object.keys(options.cloudflare ?? {})) {
    if (options.generatedExports.includes(name)) {
      throw new Error(`[flue] cloudflare.ts export "${name}" conflicts with a Flue-generated Worker export. Rename the authored export.`);
    }
  }
  const appScheduled = typeof app.scheduled === 'function' ? (app.scheduled as (...args: unknown[]) => unknown) : undefined;
  if (appScheduled !== undefined && handlers !== undefined && 'scheduled' in handlers) {
    throw new Error(
      '[flue] Both app.ts and cloudflare.ts define a scheduled handler; a Worker has one. Keep it in app.ts (it then runs on the Node server too) or in cloudflare.ts.',
    );
  }
  const serve = async (request: Request, env: unknown, ctx: unknown): Promise<Response> => {
    try {
      return await app.fetch(request, env, ctx);
    } catch (error) {
      if (error instanceof FlueHttpError) return error.getResponse();
      if (isDevMode()) return renderError(error, { devMode: true, traceparent: request.headers.get('traceparent') });
      throw error;
    }
  };
  return {
    ...(handlers as Record<string, unknown> | undefined),
    // Called as a method: a class-based app may read `this` in its handler.
    ...(appScheduled === undefined
      ? {}
      : { scheduled: (controller: unknown, env: unknown, ctx: unknown) => appScheduled.call(app, controller, env, ctx) }),
    async fetch(request: Request, env: unknown, ctx: unknown): Promise<Response> {
      const statusUrl = devStatusUrl(env as Record<string, unknown> | undefined);
      if (statusUrl === undefined) return await serve(request, env, ctx);
      await loadDevSourceMap(statusUrl);
      const [response, buildError] = await Promise.all([serve(request, env, ctx), fetchBuildError(statusUrl)]);
      return withBuildErrorHeader(response, buildError);
    },
  };
}
