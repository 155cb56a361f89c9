/**
 * The one renderer of the public HTTP error envelope. Framework routes send every
 * error through here, so status resolution, redaction and `ref` logging cannot drift per route.
 */
import { type ErrorEnvelopeBody, FlueError, FlueHttpError, envelopeOf } from '../common/errors.ts';
import { newId } from '../common/ids.ts';
import { describeForDeveloper } from '../common/dev-stack.ts';

/** Body present without a JSON content type (internal type). */
export class UnsupportedMediaTypeError extends FlueHttpError {
  constructor(contentType: string | undefined) {
    super('unsupported_media_type', 415, {
      message: 'The request body must be JSON.',
      details: `Send the body with "content-type: application/json"${contentType ? ` (got "${contentType}")` : ''}.`,
    });
    this.name = 'UnsupportedMediaTypeError';
  }
}

/** Body present but not parseable JSON (internal type). */
export class InvalidJsonError extends FlueHttpError {
  constructor(reason: string) {
    super('invalid_json', 400, {
      message: 'The request body is not valid JSON.',
      details: reason,
    });
    this.name = 'InvalidJsonError';
  }
}

/** Set on every error response, and by the router on its read responses. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'x-content-type-options': 'nosniff',
  'cross-origin-resource-policy': 'cross-origin',
});

export type ErrorLogger = (ref: string, error: unknown) => void;

export interface RenderErrorOptions {
  /** Include the class's `dev` prose in envelopes, and for any other error its message and src/ location. */
  devMode: boolean;
  /** Where logged renders go; defaults to `console.error` prefixed with the ref. */
  log?: ErrorLogger;
  /** An incoming W3C `traceparent`, recorded beside the ref in the default log line. */
  traceparent?: string | null;
}

const INTERNAL_ERROR: ErrorEnvelopeBody = Object.freeze({
  type: 'internal_error',
  message: 'An internal error occurred.',
  details: 'The server failed while handling this request. Quote the ref when reporting it.',
});

/**
 * Status resolution: a FlueHttpError answers with its own status and headers and
 * is not logged (it is the caller's mistake, not ours); any other error is a 500 that is logged
 * under a fresh `ref`, and a non-Flue error is redacted to `internal_error` so nothing leaks
 * (outside dev mode).
 */
export function renderError(error: unknown, options: RenderErrorOptions): Response {
  if (error instanceof FlueHttpError) {
    return envelopeResponse(error.status, envelopeOf(error, options.devMode), error.headers);
  }
  const ref = newId('err');
  (options.log ?? defaultLogger(options.traceparent))(ref, error);
  // In dev mode the reader is the developer: a redacted error still says what failed and where.
  const body: ErrorEnvelopeBody =
    error instanceof FlueError
      ? { ...envelopeOf(error, options.devMode), ref }
      : { ...INTERNAL_ERROR, ...(options.devMode ? { dev: describeForDeveloper(error) } : {}), ref };
  return envelopeResponse(500, body, { 'flue-error-ref': ref });
}

/** Dev mode shows `dev` prose in envelopes; decided per host (see dev-mode.ts). */
export { isDevMode } from '../common/dev-mode.ts';

/** The default log line: `[flue] err_… [traceparent=…]` then the original error in full. */
export function defaultLogger(traceparent?: string | null): ErrorLogger {
  return (ref, error) => {
    console.error(`[flue] ${ref}${traceparent ? ` traceparent=${traceparent}` : ''}`, error);
  };
}

function envelopeResponse(status: number, body: ErrorEnvelopeBody, headers: Record<string, string> | undefined): Response {
  return new Response(JSON.stringify({ error: body }), {
    status,
    headers: { ...headers, 'content-type': 'application/json', ...SECURITY_HEADERS },
  });
}
