/**
 * Small assertion helpers for the Agent API tests: capture a thrown value or a rejection so a
 * test can assert its class, `type` code and fields one by one.
 */
import { expect } from 'vitest';
import { FlueError } from '@flue/runtime';
import type { RecordedRequest } from '@flue/runtime/testing';

export const MODEL = 'anthropic/claude-haiku-4-5';

/** The value a synchronous call throws; fails the test when it does not throw. */
export function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to throw, but it returned normally');
}

/** The reason a promise rejects with; fails the test when it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the promise to reject, but it resolved');
}

/** A typed Flue error: the class and its stable `type` code. */
export function expectFlueError<C extends abstract new (...args: never[]) => FlueError>(
  error: unknown,
  cls: C,
  type: string,
): InstanceType<C> {
  expect(error).toBeInstanceOf(cls);
  expect((error as FlueError).type).toBe(type);
  return error as InstanceType<C>;
}

/** A plain `[flue]` Error: not a FlueError, prose prefixed with `[flue]`. */
export function expectPlainFlueError(error: unknown, pattern?: RegExp): Error {
  expect(error).toBeInstanceOf(Error);
  expect(error).not.toBeInstanceOf(FlueError);
  expect((error as Error).message).toMatch(/^\[flue\] /);
  if (pattern !== undefined) expect((error as Error).message).toMatch(pattern);
  return error as Error;
}

/** Every message of a recorded model request, flattened to one string (system prompt excluded). */
export function transcript(request: RecordedRequest): string {
  return request.messages.map((message) => `${message.role}: ${message.content}`).join('\n');
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolves with 'pending' when `promise` has not settled within `ms`. */
export function within<T>(promise: Promise<T>, ms: number): Promise<T | 'pending'> {
  return Promise.race([promise, sleep(ms).then(() => 'pending' as const)]);
}
