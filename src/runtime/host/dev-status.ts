/**
 * The running app's side of `flue dev`'s status channel. `flue dev` (both targets) serves a small
 * loopback HTTP endpoint and hands its URL to the Worker as a var, to the Node server as an
 * environment variable. Through it, while the latest build is rejected and the last good build
 * keeps serving, every response says so in a header; and a Worker loads the bundle's source map,
 * so dev-mode error descriptions point at `src/`. Without the variable (any deployed Worker, a
 * production Node server) none of this runs.
 */
import { decodeSourceMap } from '../common/source-map.ts';
import { setDevSourceMap } from '../common/dev-stack.ts';
import { BUILD_ERROR_HEADER, DEV_STATUS_PATHS, DEV_STATUS_VAR, type DevSourceMapBody, oneLineHeader } from '../../shared/dev-status.ts';

export { BUILD_ERROR_HEADER, DEV_STATUS_VAR };

const STATUS_TIMEOUT_MS = 2_000;

/** The status URL from a Worker's env or the process environment, if `flue dev` set one. */
export function devStatusUrl(env: Record<string, unknown> | undefined): string | undefined {
  const value = env?.[DEV_STATUS_VAR];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The rejected build's error, or undefined when the latest build is live or `flue dev` is unreachable. */
export async function fetchBuildError(statusUrl: string): Promise<string | undefined> {
  try {
    const response = await fetch(new URL(DEV_STATUS_PATHS.buildError, withSlash(statusUrl)), {
      signal: AbortSignal.timeout(STATUS_TIMEOUT_MS),
    });
    const text = await response.text();
    return response.status === 200 && text !== '' ? text : undefined;
  } catch {
    // flue dev going away must not fail the app's own response.
    return undefined;
  }
}

/** `response` carrying the build error header; a copy, since fetched responses have immutable headers. */
export function withBuildErrorHeader(response: Response, buildError: string | undefined): Response {
  // A WebSocket upgrade (101) cannot be copied without losing its socket.
  if (buildError === undefined || response.status === 101) return response;
  const copy = new Response(response.body, response);
  copy.headers.set(BUILD_ERROR_HEADER, oneLineHeader(buildError));
  return copy;
}

let sourceMapLoad: Promise<void> | undefined;

/**
 * Loads the bundle's source map once per isolate (each rebuild starts a new one). Without it,
 * dev errors still carry their message, with `dist/worker.js` frames.
 */
export function loadDevSourceMap(statusUrl: string): Promise<void> {
  sourceMapLoad ??= (async () => {
    try {
      const response = await fetch(new URL(DEV_STATUS_PATHS.sourceMap, withSlash(statusUrl)), { signal: AbortSignal.timeout(10_000) });
      if (response.status !== 200) return void (await response.body?.cancel());
      const body = (await response.json()) as DevSourceMapBody;
      setDevSourceMap({ bundle: body.bundle, map: decodeSourceMap(body) });
    } catch (error) {
      console.warn('[flue] Could not load the source map from flue dev; dev errors point at dist/.', error);
    }
  })();
  return sourceMapLoad;
}

function withSlash(url: string): string {
  return url.endsWith('/') ? url : `${url}/`;
}
