/**
 * Tool `log` lines as conversation stream content (as the Flue API specifies: emitted into the
 * conversation stream, attributed to the call, and never seen by the model). The official clients
 * reject any chunk type outside their closed set, and a `data-part` would show up in their reply `data`
 * (which holds `useDataWriter` parts only), so the lines ride as `logs` on the call's
 * `tool-output` / `tool-output-error` chunk, a field those clients ignore. They are recorded on
 * the call's outcome in the step's `tool_results` record: no row of their own, durable with the
 * result, and out of model context, which is built from outcome text only.
 */
import type { FlueLogger } from '../common/types.ts';

export interface ToolLogLine {
  level: 'info' | 'warn' | 'error';
  message: string;
  attributes?: Record<string, unknown>;
  /** ISO 8601, when the tool wrote the line. */
  timestamp: string;
}

/** Bounds what one call can add to its outcome record (lines stay small next to a 2 MB row). */
export const TOOL_LOG_MAX_LINES = 200;
export const TOOL_LOG_MAX_CHARS = 64 * 1024;

/**
 * A logger that still emits `log` events through `inner` and also keeps the lines for the call's
 * outcome. Past the bounds, lines are counted and one final line says how many were not kept.
 */
export function recordingLogger(inner: FlueLogger): { log: FlueLogger; lines(): ToolLogLine[] | undefined } {
  const lines: ToolLogLine[] = [];
  let chars = 0;
  let dropped = 0;
  const line = (level: ToolLogLine['level']) => (message: string, attributes?: Record<string, unknown>) => {
    inner[level](message, attributes);
    const kept: ToolLogLine = { level, message: String(message), ...jsonAttributes(attributes), timestamp: new Date().toISOString() };
    const size = JSON.stringify(kept).length;
    if (lines.length >= TOOL_LOG_MAX_LINES || chars + size > TOOL_LOG_MAX_CHARS) {
      dropped++;
      return;
    }
    chars += size;
    lines.push(kept);
  };
  return {
    log: { info: line('info'), warn: line('warn'), error: line('error') },
    lines() {
      if (lines.length === 0 && dropped === 0) return undefined;
      if (dropped === 0) return lines.slice();
      const note: ToolLogLine = {
        level: 'warn',
        message: `[flue] ${dropped} further log line(s) of this call were not kept in the conversation.`,
        timestamp: new Date().toISOString(),
      };
      return [...lines, note];
    },
  };
}

/** Attributes as JSON (what the log can store); errors keep their name and message. */
function jsonAttributes(attributes: Record<string, unknown> | undefined): { attributes?: Record<string, unknown> } {
  if (attributes === undefined || attributes === null || typeof attributes !== 'object') return {};
  try {
    const json = JSON.parse(
      JSON.stringify(attributes, (_key, value: unknown) =>
        value instanceof Error ? { name: value.name, message: value.message } : typeof value === 'bigint' ? String(value) : value,
      ),
    ) as Record<string, unknown>;
    return Object.keys(json).length === 0 ? {} : { attributes: json };
  } catch {
    return {};
  }
}
