'use agent';
// Not in the seed: a minimal agent that mounts the seed's check_inventory tool.
import { useModel, useTool } from '@flue/runtime';
import { checkInventory } from '../tools/check-inventory.ts';

export function InventoryAssistant() {
  useModel('anthropic/claude-haiku-4-5');
  useTool(checkInventory);
  return '回答库存问题。';
}
