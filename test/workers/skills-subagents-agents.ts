/**
 * The agent of the workerd skills/subagents tests (test/workers/skills-subagents.test.ts): what it
 * mounts follows its instance id, and it talks to its own scripted-model lane over the Anthropic
 * wire format (so recorded tool results carry their error flag).
 *
 * - `skills-*`:  an inline `defineSkill` with a resource file, and the packaged `lab-notes` SKILL.md.
 * - `depth-*`:   a subagent that declares itself again, for the delegation depth cap.
 * - `general-*`: `GeneralSubagent` next to a durable virtual sandbox and a tool of the parent's own.
 * - `review-*`:  the seed's `review_contract` harness tool over a durable virtual sandbox.
 * - `impostor-*`: a subagent that takes GeneralSubagent's reserved name `flue-general`.
 * - `finisher-*`: custom `finish`/`give_up` tools, free names outside harness prompts.
 * - `workspace-*`: a virtual sandbox at cwd `/repo` holding AGENTS.md and `.agents/skills`, and
 *   `GeneralSubagent` (workspace context discovered from the sandbox cwd and a task's cwd).
 * - `scope-*`:   the harness-scope probes (harness-scope-agents.ts), on a lane of their own.
 */
import {
  GeneralSubagent,
  defineSkill,
  defineSubagent,
  useModel,
  useSandbox,
  useSkill,
  useSubagent,
  useTool,
  virtualSandbox,
} from '@flue/runtime';
import { reviewContract } from './review-contract.ts';
import { HARNESS_SCOPE_LANE, hangingSandbox, hangingShellSandbox, scopeTools } from './harness-scope-agents.ts';
import { labNotes } from './sandbox-agents.ts';

export const STUDIO_PROVIDER = 'studio';
export const STUDIO_LANE = 'skills-subagents';

export const releaseNotes = defineSkill({
  name: 'release-notes',
  description: 'Write release notes from a changelog.',
  instructions: 'Group changes by type. Keep each line short.',
  files: { 'templates/notes.md': '# Release {{version}}\n\n## Fixes\n' },
});

/** Declares itself: every delegate can delegate one level deeper, until the cap refuses. */
export const deeper: ReturnType<typeof defineSubagent> = defineSubagent({
  name: 'deeper',
  description: 'Delegates again.',
  agent() {
    useSubagent(deeper);
    return 'Delegate deeper.';
  },
});

export const GENERAL_INSTRUCTIONS = 'Coordinate the work; delegate reading to a helper.';

const generalFiles = virtualSandbox({ files: { '/workspace/brief.txt': 'Ship the importer by Friday.\n' } });
const workspaceSkill = (name: string, description: string, body: string) =>
  `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`;
export const workspaceRepo = virtualSandbox({
  files: {
    '/repo/AGENTS.md': 'Run the linter before you finish.',
    '/repo/.agents/skills/changelog/SKILL.md': workspaceSkill('changelog', 'Update the changelog.', 'Add one line per change.'),
    '/repo/pkg/AGENTS.md': 'This package is vendored: read only.',
    '/repo/pkg/.agents/skills/vendor-check/SKILL.md': workspaceSkill(
      'vendor-check',
      'Check the vendored package.',
      'Compare against upstream.',
    ),
  },
});
const reviewFiles = virtualSandbox({ files: { '/workspace/notes.txt': 'line one\n' } });

export function Studio({ id }: { id: string }) {
  if (id.startsWith('scope-')) {
    useModel(`${STUDIO_PROVIDER}/${HARNESS_SCOPE_LANE}`);
    for (const tool of scopeTools) useTool(tool);
    if (id.startsWith('scope-bash-driver')) useSandbox(hangingShellSandbox);
    else if (id.startsWith('scope-bash')) useSandbox(hangingSandbox);
    return 'Probe the harness.';
  }
  useModel(`${STUDIO_PROVIDER}/${STUDIO_LANE}`);
  if (id.startsWith('skills-')) {
    useSkill(releaseNotes);
    useSkill(labNotes);
    return 'Write things.';
  }
  if (id.startsWith('depth-')) {
    useSubagent(deeper);
    return 'Start the chain.';
  }
  if (id.startsWith('general-')) {
    useSandbox(generalFiles);
    useTool({ name: 'stamp', description: 'Stamp the brief as handled.', run: () => 'stamped' });
    useSubagent(GeneralSubagent);
    return GENERAL_INSTRUCTIONS;
  }
  if (id.startsWith('impostor-')) {
    useSubagent({ name: 'flue-general', description: 'An impostor.', agent: () => 'Impostor.' });
    return 'Delegate.';
  }
  if (id.startsWith('finisher-')) {
    useTool({ name: 'finish', description: 'Mark the ticket finished.', run: () => 'ticket finished' });
    useTool({ name: 'give_up', description: 'Mark the ticket abandoned.', run: () => 'ticket abandoned' });
    return 'Close tickets.';
  }
  if (id.startsWith('workspace-')) {
    useSandbox(workspaceRepo, { cwd: '/repo' });
    useSubagent(GeneralSubagent);
    return 'Maintain the repository.';
  }
  useSandbox(reviewFiles);
  useTool(reviewContract);
  return 'Review contracts in the workspace.';
}
