/** Fixtures shared by the tool-runner test files. */
import { expect } from 'vitest';
import { defineTool } from '../authoring/define-tool.ts';
import type { ToolDefinition } from '../authoring/define-tool.ts';
import type { FlueError } from '../common/errors.ts';
import type { ToolCallEnvironment, ToolOutcome } from './tool-runner.ts';
import type { FlueLogger } from '../common/types.ts';

export const SUFFIX = ' The tool execution could not be confirmed cancelled and may still be running.';

export const logger: FlueLogger = { info() {}, warn() {}, error() {} };

export function environment(overrides: Partial<ToolCallEnvironment> = {}): ToolCallEnvironment {
  return { toolCallId: 'call_1', signal: new AbortController().signal, log: logger, ...overrides };
}

/** A tool whose `run` returns whatever the test hands it (typed loosely on purpose). */
export function returning(value: unknown, extra: Record<string, unknown> = {}): ToolDefinition {
  return defineTool({ name: 'echo', description: 'Returns a value.', run: () => value, ...extra } as never);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function expectError<E extends FlueError>(outcome: ToolOutcome, errorClass: new (...args: never[]) => E, type: string): E {
  expect(outcome.isError).toBe(true);
  expect(outcome.terminate).toBeUndefined();
  expect(outcome.output).toBeUndefined();
  expect(outcome.error).toBeInstanceOf(errorClass);
  const error = outcome.error as E;
  expect(error.type).toBe(type);
  expect(outcome.content).toBe(error.message);
  return error;
}
