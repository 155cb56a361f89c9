/**
 * `flue dev`'s status endpoint (both targets), on loopback: the app asks it whether the latest
 * build was rejected (and marks its responses, runtime/host/dev-status.ts), and a Worker fetches
 * the bundle's source map from it, since workerd cannot read `dist/` itself. Nothing of it exists
 * outside `flue dev`.
 */
import { readFileSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { DEV_STATUS_PATHS, DEV_STATUS_VAR, type DevSourceMapBody, oneLineHeader } from '../shared/dev-status.ts';

export { DEV_STATUS_VAR };

export interface DevStatusServer {
  /** Base URL, handed to the app as `FLUE_DEV_STATUS_URL`. */
  readonly url: string;
  /** The rejected build's error, or undefined once a build succeeds. */
  setBuildError(text: string | undefined): void;
  close(): Promise<void>;
}

export interface DevStatusOptions {
  root: string;
  /** Absolute path of the bundle's source map, served with sources relative to `root`. */
  sourceMap?: string;
}

export async function startDevStatusServer(options: DevStatusOptions): Promise<DevStatusServer> {
  let buildError: string | undefined;
  const server: Server = createServer((req, res) => {
    const route = (req.url ?? '').replace(/^\/+/, '').split('?')[0];
    if (route === DEV_STATUS_PATHS.buildError) {
      if (buildError === undefined) return void res.writeHead(204).end();
      return void res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(buildError);
    }
    if (route === DEV_STATUS_PATHS.sourceMap && options.sourceMap !== undefined) {
      const body = readSourceMap(options.root, options.sourceMap);
      if (body === undefined) return void res.writeHead(404).end();
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    setBuildError(text) {
      buildError = text === undefined ? undefined : oneLineHeader(text);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Read per request: the map on disk is the running bundle's (a rejected build writes nothing). */
function readSourceMap(root: string, file: string): DevSourceMapBody | undefined {
  let map: { sources?: unknown; sourceRoot?: unknown; mappings?: unknown };
  try {
    map = JSON.parse(readFileSync(file, 'utf8')) as typeof map;
  } catch {
    return undefined;
  }
  if (!Array.isArray(map.sources) || typeof map.mappings !== 'string') return undefined;
  const base = path.resolve(path.dirname(file), typeof map.sourceRoot === 'string' ? map.sourceRoot : '');
  const sources = map.sources.map((source) =>
    path
      .relative(root, path.resolve(base, String(source)))
      .split(path.sep)
      .join('/'),
  );
  return { bundle: path.basename(file).replace(/\.map$/, ''), sources, mappings: map.mappings };
}
