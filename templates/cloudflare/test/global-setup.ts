/**
 * Runs in Node before the tests: the scripted model server every agent talks to instead of a
 * provider (the Worker reaches it over loopback through FLUE_SCRIPTED_MODEL_URL).
 */
import type { TestProject } from 'vitest/node';
import { startScriptedModelServer, type ScriptedModelServer } from '@flue/runtime/testing';
import { scriptedModel } from './scripted-model.ts';

let server: ScriptedModelServer | undefined;

export async function setup(project: TestProject): Promise<void> {
  server = await startScriptedModelServer({ fallback: scriptedModel });
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
