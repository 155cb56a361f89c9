/**
 * The wire between `flue dev` (src/build/dev-status.ts) and the app it serves
 * (src/runtime/host/dev-status.ts): the variable naming the status endpoint, its paths, the
 * response header of a rejected build, and the header's one-line form.
 */

/** The variable `flue dev` sets to its status endpoint's base URL. */
export const DEV_STATUS_VAR = 'FLUE_DEV_STATUS_URL';
/** Set on every response while the latest build is rejected: the build error, on one line. */
export const BUILD_ERROR_HEADER = 'x-flue-build-error';

/** Paths under the status URL; `flue dev` serves them (src/build/dev-status.ts). */
export const DEV_STATUS_PATHS = { buildError: 'build-error', sourceMap: 'source-map' } as const;

/** What `GET <url>/source-map` answers: the bundle's map with sources relative to the project. */
export interface DevSourceMapBody {
  bundle: string;
  sources: string[];
  mappings: string;
}

const MAX_HEADER_CHARS = 1_000;

/** One line of printable ASCII (what every HTTP stack accepts as a header value), shortened. */
export function oneLineHeader(text: string): string {
  const line = text
    .replace(/\s+/g, ' ')
    .replace(/[^\x20-\x7e]/g, '?')
    .trim();
  return line.length > MAX_HEADER_CHARS ? `${line.slice(0, MAX_HEADER_CHARS - 3)}...` : line;
}
