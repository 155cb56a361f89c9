/**
 * Runs in Node before the workerd tests (and the workerd benchmark): the scripted model server they
 * share. Worker code scripts it over HTTP lanes (the Worker cannot reach this process's memory).
 */
import type { TestProject } from 'vitest/node';
// The sources, not dist/ (test/support/source-conditions.ts): this runs in the vitest process.
import { startScriptedModelServer, type ScriptedModelServer } from '../../src/testing/index.ts';

let server: ScriptedModelServer | undefined;

export async function setup(project: TestProject): Promise<void> {
  server = await startScriptedModelServer();
  project.provide('scriptedModelUrl', server.url);
}

export async function teardown(): Promise<void> {
  await server?.close();
}

declare module 'vitest' {
  export interface ProvidedContext {
    scriptedModelUrl: string;
  }
}
