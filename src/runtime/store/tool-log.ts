/**
 * Tool `log` lines as conversation stream content (as the Flue API specifies: emitted into the
 * conversation stream, attributed to the call, and never seen by the model). A running call's
 * lines are committed while it runs, in `tool_progress` records of their own (coalesced, see
 * engine/tool-progress.ts), so a client shows progress before the result; the model context is
 * built from outcome text only and never reads them.
 */

export interface ToolLogLine {
  level: 'info' | 'warn' | 'error';
  message: string;
  attributes?: Record<string, unknown>;
  /** ISO 8601, when the tool wrote the line. */
  timestamp: string;
}

/**
 * What one call may keep: past either bound its further lines are counted, not stored, and one
 * marker line says how many (so a chatty tool cannot grow the log without bound).
 */
export const TOOL_LOG_MAX_LINES = 200;
export const TOOL_LOG_MAX_CHARS = 64 * 1024;
/** What all calls of one response may keep together (a response can run many calls). */
export const TOOL_LOG_RESPONSE_MAX_LINES = 1_000;
export const TOOL_LOG_RESPONSE_MAX_CHARS = 256 * 1024;

/** One line as the log keeps it, with its stored size (what the bounds count). */
export function logLine(level: ToolLogLine['level'], message: unknown, attributes: unknown): { line: ToolLogLine; size: number } {
  const line: ToolLogLine = { level, message: String(message), ...jsonAttributes(attributes), timestamp: new Date().toISOString() };
  return { line, size: JSON.stringify(line).length };
}

/** The one line that stands for the lines of a call past its bounds. */
export function droppedLinesMarker(dropped: number): ToolLogLine {
  return {
    level: 'warn',
    message: `… ${dropped} more log line(s) of this call dropped`,
    attributes: { dropped },
    timestamp: new Date().toISOString(),
  };
}

/** Attributes as JSON (what the log can store); errors keep their name and message. */
function jsonAttributes(attributes: unknown): { attributes?: Record<string, unknown> } {
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
