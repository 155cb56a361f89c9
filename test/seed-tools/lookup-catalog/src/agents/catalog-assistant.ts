'use agent';
// Not in the seed: a minimal agent that mounts the seed's bounded lookup_catalog tool.
import { useModel, useTool } from '@flue/runtime';
import { lookupCatalog } from '../tools/lookup-catalog.ts';

export function CatalogAssistant() {
  useModel('anthropic/claude-haiku-4-5');
  useTool(lookupCatalog);
  return '回答目录问题。';
}
