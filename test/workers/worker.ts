/**
 * The workerd test entry: the same three calls the generated entry makes (build-and-cli.md §3.2),
 * with the scripted model provider instead of pi-ai's built-ins.
 */
import { env } from 'cloudflare:workers';
import { setProvider } from '@flue/runtime';
import { configureFlueWorker, createFlueAgentClass, createFlueWorkerHandlers } from '@flue/runtime/cloudflare';
import { scriptedProvider } from '@flue/runtime/testing';
import { ReleaseManager } from '../seed-tools/approval-gate/src/agents/release-manager.ts';
import { CustomerOrders } from '../seed-tools/customer-orders/src/agents/customer-orders.ts';
import { ECHO_LANE, Echo, LOAD_LANE, Load, PROVISION_LANE, Provisioner, WORKSPACE_LANE, Workspace } from './agents.ts';
import { LAB_PERSIST_LANE, LAB_PROVIDER, LAB_TOOLS_LANE, SandboxLab } from './sandbox-agents.ts';
import { STUDIO_LANE, STUDIO_PROVIDER, Studio } from './skills-subagents-agents.ts';
import { Hasty, Typo, Unruly } from './definition-agents.ts';
import { DIGEST_LANE, Digest, FLOW_LANE, Flow, SLOW_FLOW_LANE, SlowFlow, WF_PROVIDER, scheduled } from './workflows.ts';

const modelUrl = (env as unknown as { SCRIPTED_MODEL_URL: string }).SCRIPTED_MODEL_URL;
setProvider(scriptedProvider({ baseUrl: modelUrl, id: 'scripted', models: [ECHO_LANE, PROVISION_LANE, WORKSPACE_LANE, LOAD_LANE], api: 'openai-completions' }));
setProvider(scriptedProvider({ baseUrl: modelUrl, id: 'anthropic', models: ['claude-sonnet-4-6', 'claude-haiku-4-5'], api: 'anthropic-messages' }));
setProvider(scriptedProvider({ baseUrl: modelUrl, id: WF_PROVIDER, models: [FLOW_LANE, SLOW_FLOW_LANE, DIGEST_LANE], api: 'openai-completions' }));
// Anthropic wire format: recorded tool results carry their error flag.
setProvider(scriptedProvider({ baseUrl: modelUrl, id: LAB_PROVIDER, models: [LAB_PERSIST_LANE, LAB_TOOLS_LANE], api: 'anthropic-messages' }));
setProvider(scriptedProvider({ baseUrl: modelUrl, id: STUDIO_PROVIDER, models: [STUDIO_LANE], api: 'anthropic-messages' }));

const agents = [
  { identity: 'Echo', agent: Echo, className: 'FlueEchoAgent', bindingName: 'FLUE_ECHO_AGENT' },
  { identity: 'Provisioner', agent: Provisioner, className: 'FlueProvisionerAgent', bindingName: 'FLUE_PROVISIONER_AGENT' },
  { identity: 'ReleaseManager', agent: ReleaseManager, className: 'FlueReleaseManagerAgent', bindingName: 'FLUE_RELEASE_MANAGER_AGENT' },
  { identity: 'Flow', agent: Flow, className: 'FlueFlowAgent', bindingName: 'FLUE_FLOW_AGENT' },
  { identity: 'SlowFlow', agent: SlowFlow, className: 'FlueSlowFlowAgent', bindingName: 'FLUE_SLOW_FLOW_AGENT' },
  { identity: 'Digest', agent: Digest, className: 'FlueDigestAgent', bindingName: 'FLUE_DIGEST_AGENT' },
  { identity: 'Workspace', agent: Workspace, className: 'FlueWorkspaceAgent', bindingName: 'FLUE_WORKSPACE_AGENT' },
  { identity: 'SandboxLab', agent: SandboxLab, className: 'FlueSandboxLabAgent', bindingName: 'FLUE_SANDBOX_LAB_AGENT' },
  { identity: 'Studio', agent: Studio, className: 'FlueStudioAgent', bindingName: 'FLUE_STUDIO_AGENT' },
  { identity: 'Load', agent: Load, className: 'FlueLoadAgent', bindingName: 'FLUE_LOAD_AGENT' },
  { identity: 'CustomerOrders', agent: CustomerOrders, className: 'FlueCustomerOrdersAgent', bindingName: 'FLUE_CUSTOMER_ORDERS_AGENT' },
  { identity: 'Hasty', agent: Hasty as never, className: 'FlueHastyAgent', bindingName: 'FLUE_HASTY_AGENT' },
  { identity: 'Unruly', agent: Unruly, className: 'FlueUnrulyAgent', bindingName: 'FLUE_UNRULY_AGENT' },
  { identity: 'Typo', agent: Typo, className: 'FlueTypoAgent', bindingName: 'FLUE_TYPO_AGENT' },
];
configureFlueWorker({ env: env as unknown as Record<string, unknown>, agents });

export const FlueEchoAgent = createFlueAgentClass(agents[0]!);
export const FlueProvisionerAgent = createFlueAgentClass(agents[1]!);
export const FlueReleaseManagerAgent = createFlueAgentClass(agents[2]!);
export const FlueFlowAgent = createFlueAgentClass(agents[3]!);
export const FlueSlowFlowAgent = createFlueAgentClass(agents[4]!);
export const FlueDigestAgent = createFlueAgentClass(agents[5]!);
export const FlueWorkspaceAgent = createFlueAgentClass(agents[6]!);
export const FlueSandboxLabAgent = createFlueAgentClass(agents[7]!);
export const FlueStudioAgent = createFlueAgentClass(agents[8]!);
export const FlueLoadAgent = createFlueAgentClass(agents[9]!);
export const FlueCustomerOrdersAgent = createFlueAgentClass(agents[10]!);
export const FlueHastyAgent = createFlueAgentClass(agents[11]!);
export const FlueUnrulyAgent = createFlueAgentClass(agents[12]!);
export const FlueTypoAgent = createFlueAgentClass(agents[13]!);
// Workflows (wrangler.jsonc "workflows"), as a project's src/cloudflare.ts would export them.
export { AgentFlow, ConversationFlow, PlainInitFlow } from './workflows.ts';

export default createFlueWorkerHandlers({
  app: { fetch: () => new Response('flue-workers test worker') },
  cloudflare: { default: { scheduled } },
  generatedExports: ['FlueEchoAgent', 'FlueProvisionerAgent', 'FlueReleaseManagerAgent', 'FlueFlowAgent', 'FlueSlowFlowAgent', 'FlueDigestAgent', 'FlueWorkspaceAgent', 'FlueSandboxLabAgent', 'FlueStudioAgent', 'FlueLoadAgent', 'FlueCustomerOrdersAgent', 'FlueHastyAgent', 'FlueUnrulyAgent', 'FlueTypoAgent'],
});
