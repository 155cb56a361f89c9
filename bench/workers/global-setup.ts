/**
 * Runs in Node before the benchmark: the scripted model server. The Worker scripts it over HTTP
 * lanes (one lane per model id) and reads back recorded requests with their arrival times.
 */
import type { TestProject } from 'vitest/node';
import { startScriptedModelServer, type ScriptedModelServer } from '@flue/runtime/testing';

let server: ScriptedModelServer | undefined;

export async function setup(project: TestProject): Promise<void> {
  server = await startScriptedModelServer();
  project.provide('benchModelUrl', server.url);
}

export async function teardown(): Promise<void> {
  await server?.close();
}

declare module 'vitest' {
  export interface ProvidedContext {
    benchModelUrl: string;
  }
}
