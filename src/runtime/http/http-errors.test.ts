/** renderError(): the public error envelope and status resolution of errors.md §2. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  FlueError,
  InvalidRequestError,
  MethodNotAllowedError,
  OperationFailedError,
  RuntimeUnavailableError,
  SubmissionConflictError,
} from '../common/errors.ts';
import { InvalidJsonError, UnsupportedMediaTypeError, isDevMode, renderError } from './http-errors.ts';

function capture() {
  const logged: { ref: string; error: unknown }[] = [];
  return { logged, log: (ref: string, error: unknown) => logged.push({ ref, error }) };
}

function expectCommonHeaders(response: Response) {
  expect(response.headers.get('content-type')).toBe('application/json');
  expect(response.headers.get('x-content-type-options')).toBe('nosniff');
  expect(response.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
}

describe('renderError', () => {
  it('renders a FlueHttpError with its own status, headers and meta, unlogged and without ref', async () => {
    const { logged, log } = capture();
    const response = renderError(new SubmissionConflictError('sub_1'), { devMode: false, log });
    expect(response.status).toBe(409);
    expectCommonHeaders(response);
    expect(response.headers.get('flue-error-ref')).toBeNull();
    const body = await response.json();
    expect(body).toEqual({
      error: {
        type: 'submission_conflict',
        message: expect.any(String),
        details: expect.any(String),
        meta: { submissionId: 'sub_1' },
      },
    });
    expect(logged).toEqual([]);
  });

  it('keeps class headers (Allow on 405, Retry-After on 503)', () => {
    expect(renderError(new MethodNotAllowedError(['GET', 'HEAD', 'POST']), { devMode: false }).headers.get('allow')).toBe(
      'GET, HEAD, POST',
    );
    const unavailable = renderError(new RuntimeUnavailableError('draining'), { devMode: false });
    expect(unavailable.status).toBe(503);
    expect(unavailable.headers.get('retry-after')).toBe('1');
  });

  it('renders another FlueError as 500 with its typed envelope plus a logged ref', async () => {
    const { logged, log } = capture();
    const error = new OperationFailedError('prompt', 'model unreachable');
    const response = renderError(error, { devMode: false, log });
    expect(response.status).toBe(500);
    expectCommonHeaders(response);
    const body = await response.json();
    expect(body.error).toMatchObject({ type: 'operation_failed', meta: { operation: 'prompt', reason: 'model unreachable' } });
    expect(body.error.ref).toMatch(/^err_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(response.headers.get('flue-error-ref')).toBe(body.error.ref);
    expect(logged).toEqual([{ ref: body.error.ref, error }]);
  });

  it('redacts anything else to internal_error with a ref; nothing of the original leaks', async () => {
    const { logged, log } = capture();
    const error = new Error('secret database password in message');
    const response = renderError(error, { devMode: false, log });
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(text).not.toContain('secret');
    const body = JSON.parse(text);
    expect(Object.keys(body.error).sort()).toEqual(['details', 'message', 'ref', 'type']);
    expect(body.error).toMatchObject({ type: 'internal_error', message: 'An internal error occurred.' });
    expect(response.headers.get('flue-error-ref')).toBe(body.error.ref);
    expect(logged[0].error).toBe(error);
    // Non-Error throwables too.
    expect((await renderError('boom', { devMode: false, log }).json()).error.type).toBe('internal_error');
  });

  it('in dev mode, a redacted error names the original message and its src/ location in dev', async () => {
    const { logged, log } = capture();
    const error = new TypeError('customer table missing');
    error.stack = `TypeError: customer table missing\n    at lookup (${process.cwd()}/src/agents/orders.ts:12:5)\n    at run (node:internal/x:1:1)`;
    const response = renderError(error, { devMode: true, log });
    expect(response.status).toBe(500);
    const body = (await response.json()) as { error: Record<string, string> };
    expect(body.error).toEqual({
      type: 'internal_error',
      message: 'An internal error occurred.',
      details: expect.any(String),
      dev: 'TypeError: customer table missing (at src/agents/orders.ts:12:5)\n    at lookup (src/agents/orders.ts:12:5)\n    at run (node:internal/x:1:1)',
      ref: logged[0]!.ref,
    });
  });

  it('shows dev prose only in dev mode', async () => {
    const error = new FlueError('x', { message: 'm', dev: 'developer hint' });
    const quiet = await renderError(error, { devMode: false, log: () => {} }).json();
    expect(quiet.error.dev).toBeUndefined();
    const loud = await renderError(error, { devMode: true, log: () => {} }).json();
    expect(loud.error.dev).toBe('developer hint');
  });

  it('default log line is prefixed with the ref and records traceparent', () => {
    const spy = vi.spyOn(console, 'error').mockImplementation(() => {});
    const response = renderError(new Error('x'), { devMode: false, traceparent: '00-abc-def-01' });
    const ref = response.headers.get('flue-error-ref');
    expect(spy).toHaveBeenCalledWith(`[flue] ${ref} traceparent=00-abc-def-01`, expect.any(Error));
    spy.mockRestore();
  });

  it('defines the internal invalid_json (400) and unsupported_media_type (415) types', async () => {
    const json = renderError(new InvalidJsonError('Unexpected token'), { devMode: false });
    expect(json.status).toBe(400);
    expect((await json.json()).error.type).toBe('invalid_json');
    const media = renderError(new UnsupportedMediaTypeError('text/plain'), { devMode: false });
    expect(media.status).toBe(415);
    expect((await media.json()).error.type).toBe('unsupported_media_type');
    expect(renderError(new InvalidRequestError('bad'), { devMode: false }).status).toBe(400);
  });
});

describe('isDevMode', () => {
  afterEach(() => vi.unstubAllEnvs());
  it('is on only for NODE_ENV=development', () => {
    vi.stubEnv('NODE_ENV', 'development');
    expect(isDevMode()).toBe(true);
    vi.stubEnv('NODE_ENV', 'production');
    expect(isDevMode()).toBe(false);
  });
});
