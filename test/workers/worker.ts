/**
 * The workerd test entry: the same three calls the generated entry makes (build-and-cli.md §3.2),
 * with the scripted model provider instead of pi-ai's built-ins.
 */
import { env } from 'cloudflare:workers';
import { setProvider } from '@flue/runtime';
import {
  cloudflareBindingProvider,
  configureFlueWorker,
  createFlueAgentClass,
  createFlueWorkerHandlers,
  extend,
} from '@flue/runtime/cloudflare';
import { scriptedProvider } from '@flue/runtime/testing';
import { ReleaseManager } from '../seed-tools/approval-gate/src/agents/release-manager.ts';
import { CustomerOrders } from '../seed-tools/customer-orders/src/agents/customer-orders.ts';
import {
  Brancher,
  ECHO_LANE,
  Echo,
  FORK_LANE,
  LOAD_LANE,
  Load,
  PROVISION_LANE,
  Provisioner,
  SPEND_LANE,
  SPEND_PROVIDER,
  STALL_LANE,
  Spender,
  Staller,
  TICKER_LANE,
  Ticker,
  WORKSPACE_LANE,
  Workspace,
} from './agents.ts';
import { HOARD_LANE, HOARD_PROVIDER, Hoarder } from './large-agents.ts';
import { LAB_PERSIST_LANE, LAB_PROVIDER, LAB_TOOLS_LANE, SandboxLab } from './sandbox-agents.ts';
import { STUDIO_LANE, STUDIO_PROVIDER, Studio } from './skills-subagents-agents.ts';
import { HARNESS_SCOPE_LANE } from './harness-scope-agents.ts';
import { Hasty, Typo, Unruly } from './definition-agents.ts';
import { app } from './channel-app.ts';
import { Forecaster } from './workers-ai-agents.ts';
import { CONTRACT_LANE, Contract } from '../contract/agents.ts';
import { DIGEST_LANE, Digest, FLOW_LANE, Flow, SLOW_FLOW_LANE, SlowFlow, WF_PROVIDER, scheduled } from './workflows.ts';

const modelUrl = (env as unknown as { SCRIPTED_MODEL_URL: string }).SCRIPTED_MODEL_URL;
setProvider(
  scriptedProvider({
    baseUrl: modelUrl,
    id: 'scripted',
    models: [ECHO_LANE, PROVISION_LANE, WORKSPACE_LANE, LOAD_LANE, TICKER_LANE, CONTRACT_LANE, STALL_LANE, FORK_LANE],
    api: 'openai-completions',
  }),
);
setProvider(
  scriptedProvider({ baseUrl: modelUrl, id: 'anthropic', models: ['claude-sonnet-4-6', 'claude-haiku-4-5'], api: 'anthropic-messages' }),
);
setProvider(
  scriptedProvider({ baseUrl: modelUrl, id: WF_PROVIDER, models: [FLOW_LANE, SLOW_FLOW_LANE, DIGEST_LANE], api: 'openai-completions' }),
);
// Anthropic wire format: recorded tool results carry their error flag.
setProvider(
  scriptedProvider({ baseUrl: modelUrl, id: LAB_PROVIDER, models: [LAB_PERSIST_LANE, LAB_TOOLS_LANE], api: 'anthropic-messages' }),
);
setProvider(
  scriptedProvider({ baseUrl: modelUrl, id: STUDIO_PROVIDER, models: [STUDIO_LANE, HARNESS_SCOPE_LANE], api: 'anthropic-messages' }),
);
setProvider(
  scriptedProvider({
    baseUrl: modelUrl,
    id: SPEND_PROVIDER,
    models: [SPEND_LANE],
    api: 'openai-completions',
    cost: { input: 3, output: 15, cacheRead: 0, cacheWrite: 0 },
  }),
);
setProvider(scriptedProvider({ baseUrl: modelUrl, id: HOARD_PROVIDER, models: [HOARD_LANE], api: 'openai-completions' }));

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
  { identity: 'Hoarder', agent: Hoarder, className: 'FlueHoarderAgent', bindingName: 'FLUE_HOARDER_AGENT' },
  { identity: 'Ticker', agent: Ticker, className: 'FlueTickerAgent', bindingName: 'FLUE_TICKER_AGENT' },
  { identity: 'Hasty', agent: Hasty as never, className: 'FlueHastyAgent', bindingName: 'FLUE_HASTY_AGENT' },
  { identity: 'Unruly', agent: Unruly, className: 'FlueUnrulyAgent', bindingName: 'FLUE_UNRULY_AGENT' },
  { identity: 'Typo', agent: Typo, className: 'FlueTypoAgent', bindingName: 'FLUE_TYPO_AGENT' },
  { identity: 'Forecaster', agent: Forecaster, className: 'FlueForecasterAgent', bindingName: 'FLUE_FORECASTER_AGENT' },
  { identity: 'Contract', agent: Contract, className: 'FlueContractAgent', bindingName: 'FLUE_CONTRACT_AGENT' },
  { identity: 'Staller', agent: Staller, className: 'FlueStallerAgent', bindingName: 'FLUE_STALLER_AGENT' },
  { identity: 'Spender', agent: Spender, className: 'FlueSpenderAgent', bindingName: 'FLUE_SPENDER_AGENT' },
  { identity: 'Brancher', agent: Brancher, className: 'FlueBrancherAgent', bindingName: 'FLUE_BRANCHER_AGENT' },
];
const entry = (identity: string) => agents.find((candidate) => candidate.identity === identity)!;
configureFlueWorker({
  env: env as unknown as Record<string, unknown>,
  agents,
  workersAI: (binding) => cloudflareBindingProvider({ binding }),
});

export const FlueEchoAgent = createFlueAgentClass(entry('Echo'));
export const FlueProvisionerAgent = createFlueAgentClass(entry('Provisioner'));
export const FlueReleaseManagerAgent = createFlueAgentClass(entry('ReleaseManager'));
export const FlueFlowAgent = createFlueAgentClass(entry('Flow'));
export const FlueSlowFlowAgent = createFlueAgentClass(entry('SlowFlow'));
export const FlueDigestAgent = createFlueAgentClass(entry('Digest'));
export const FlueWorkspaceAgent = createFlueAgentClass(entry('Workspace'));
export const FlueSandboxLabAgent = createFlueAgentClass(entry('SandboxLab'));
export const FlueStudioAgent = createFlueAgentClass(entry('Studio'));
export const FlueLoadAgent = createFlueAgentClass(entry('Load'));
export const FlueCustomerOrdersAgent = createFlueAgentClass(entry('CustomerOrders'));
export const FlueHoarderAgent = createFlueAgentClass(entry('Hoarder'));
// A module's `cloudflare = extend({ base })` export, as a project lowers the slice budget: here to
// zero, so every turn boundary of a Ticker response ends its alarm pass.
export const FlueTickerAgent = createFlueAgentClass(
  entry('Ticker'),
  extend({
    base: (Base) =>
      class extends Base {
        static override sliceBudgetMs = 0;
      },
  }),
);
export const FlueHastyAgent = createFlueAgentClass(entry('Hasty'));
export const FlueUnrulyAgent = createFlueAgentClass(entry('Unruly'));
export const FlueTypoAgent = createFlueAgentClass(entry('Typo'));
export const FlueForecasterAgent = createFlueAgentClass(entry('Forecaster'));
// The host contract's agent (test/contract/cases.ts, run here by contract.test.ts).
export const FlueContractAgent = createFlueAgentClass(entry('Contract'));
export const FlueStallerAgent = createFlueAgentClass(entry('Staller'));
export const FlueSpenderAgent = createFlueAgentClass(entry('Spender'));
export const FlueBrancherAgent = createFlueAgentClass(entry('Brancher'));
// The `AI` service binding's target (wrangler.jsonc "services").
export { FakeWorkersAI } from './fake-workers-ai.ts';
// Workflows (wrangler.jsonc "workflows"), as a project's src/cloudflare.ts would export them.
export { AgentFlow, ConversationFlow, PlainInitFlow } from './workflows.ts';

export default createFlueWorkerHandlers({
  app,
  cloudflare: { default: { scheduled } },
  generatedExports: [
    'FlueEchoAgent',
    'FlueProvisionerAgent',
    'FlueReleaseManagerAgent',
    'FlueFlowAgent',
    'FlueSlowFlowAgent',
    'FlueDigestAgent',
    'FlueWorkspaceAgent',
    'FlueSandboxLabAgent',
    'FlueStudioAgent',
    'FlueLoadAgent',
    'FlueCustomerOrdersAgent',
    'FlueHoarderAgent',
    'FlueTickerAgent',
    'FlueHastyAgent',
    'FlueUnrulyAgent',
    'FlueTypoAgent',
    'FlueForecasterAgent',
  ],
});
