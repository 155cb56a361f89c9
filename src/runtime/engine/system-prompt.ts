/**
 * The system prompt of a render, for the conversation loop and harness scratch conversations
 * alike: the (live) instructions, the skill catalog, then the roster of delegates.
 */
import type { PromptCatalogs } from '../authoring/narration.ts';
import type { RenderResult } from '../authoring/render.ts';
import { skillCatalog } from '../skills/catalog.ts';
import { rosterSection } from '../authoring/subagents.ts';

/**
 * The catalogs come from `catalogs` — the conversation's frozen baseline in the main conversation
 * (narration.ts) — and from the render itself in scratch conversations.
 */
export function systemPrompt(render: RenderResult, catalogs: PromptCatalogs = render): { systemPrompt?: string } {
  const catalog = skillCatalog(catalogs.skills);
  const parts = [
    ...(render.instructions === undefined ? [] : [render.instructions]),
    ...(catalog === undefined ? [] : [catalog]),
    rosterSection(catalogs.subagents),
  ];
  return parts.length === 0 ? {} : { systemPrompt: parts.join('\n\n') };
}
