'use agent';
// Not in the seed: a minimal agent that mounts the seed's durable provision_workspace tool.
import { useModel, useTool } from '@flue/runtime';
import { provisionWorkspace } from '../tools/provision-workspace.ts';

export function Onboarding() {
  useModel('anthropic/claude-haiku-4-5');
  useTool(provisionWorkspace);
  return '为新客户配置工作空间。';
}
