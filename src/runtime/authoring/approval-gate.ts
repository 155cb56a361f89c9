/**
 * `useApprovalGate()`: the documented approval-gate pattern, shipped, with what the pattern
 * leaves to the app. The tool call records its exact arguments and ends the turn with
 * `{ status: 'pending_approval', approvalId: toolCallId }`; a `tool-approval` signal from trusted
 * code decides it; `useAgentStart` runs the stored arguments and appends a `tool-approval-result`
 * signal. Added: an expiry (a framework timer whose delivery records a deterministic deny), a
 * digest of the arguments (shown to the approver, checked on decide), and decisions accepted only
 * from `origin: 'app'`.
 */
import type * as v from 'valibot';
import { sha256Hex } from '../common/ids.ts';
import { hookUsageError } from '../common/definition-errors.ts';
import { approvalTimerName } from '../common/timer-names.ts';
import { FRAMEWORK_TIMER_PREFIX } from '../common/timer-names.ts';
import { rootFrame, useAgentStart, useDelivery, usePersistentState, useTool } from './hooks.ts';

export interface ApprovalGateOptions<TInput extends v.GenericSchema<Record<string, unknown>>> {
  name: string;
  description: string;
  input: TInput;
  /** Return false to run the call without asking. Omitted: every call asks. */
  needsApproval?: (args: v.InferOutput<TInput>) => boolean;
  /** The side effect; returns the summary the model reads. `approvalId` doubles as an idempotency key. */
  execute: (args: v.InferOutput<TInput>, approvalId: string) => Promise<string>;
  /** Milliseconds after which an undecided request is denied on its own (a recorded `expired` result). */
  expiresInMs?: number;
}

/** What the gate keeps per undecided request, in persistent state. */
interface PendingCall {
  args: unknown;
  argsDigest: string;
  requestedAt: string;
  expiresAt?: string;
}

/** The tool output of a request awaiting a decision. */
export interface PendingApprovalOutput {
  status: 'pending_approval';
  approvalId: string;
  /** `sha256:<hex>` of the arguments' canonical JSON: show it to the approver, pass it to `decideApproval()`. */
  argsDigest: string;
  expiresAt?: string;
}

/** How a request ended, as the `outcome` attribute of its `tool-approval-result` signal says. */
export type ApprovalOutcome = 'approved' | 'denied' | 'expired' | 'failed';

/** JSON with object keys sorted, so equal arguments always digest alike. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.keys(value)
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The digest binding a decision to the exact arguments recorded with the request. */
export async function argumentsDigest(args: unknown): Promise<string> {
  return `sha256:${await sha256Hex(canonicalJson(args))}`;
}

export function useApprovalGate<TInput extends v.GenericSchema<Record<string, unknown>>>(gate: ApprovalGateOptions<TInput>): void {
  const { expiresInMs } = gate;
  if (expiresInMs !== undefined && (typeof expiresInMs !== 'number' || !Number.isFinite(expiresInMs) || expiresInMs <= 0)) {
    throw hookUsageError(`[flue] useApprovalGate("${gate.name}") expiresInMs must be a positive number of milliseconds.`);
  }
  const timers = rootFrame('useApprovalGate').scope?.timers;
  const [pending, setPending] = usePersistentState<Record<string, PendingCall>>(`${FRAMEWORK_TIMER_PREFIX}approvals:${gate.name}`, {});
  const delivery = useDelivery();

  useTool({
    name: gate.name,
    description: `${gate.description} Some calls need operator approval before they run.`,
    input: gate.input,
    async run({ data, toolCallId }) {
      if (gate.needsApproval && !gate.needsApproval(data)) {
        return { output: { status: 'executed', result: await gate.execute(data, toolCallId) } };
      }
      const call: PendingCall = { args: data, argsDigest: await argumentsDigest(data), requestedAt: new Date().toISOString() };
      if (expiresInMs !== undefined) {
        if (timers === undefined) throw hookUsageError('[flue] useApprovalGate() expiresInMs needs a durable runtime (bare render).');
        // Recorded with this call's result: a retried response neither loses nor doubles the expiry.
        call.expiresAt = timers.schedule(approvalTimerName(toolCallId), { inMs: expiresInMs }, true).dueAt;
      }
      setPending((previous) => ({ ...previous, [toolCallId]: call }));
      const output: PendingApprovalOutput = {
        status: 'pending_approval',
        approvalId: toolCallId,
        argsDigest: call.argsDigest,
        ...(call.expiresAt === undefined ? {} : { expiresAt: call.expiresAt }),
      };
      return { output, terminate: true };
    },
  });

  useAgentStart(async ({ append }) => {
    if (delivery.kind !== 'signal') return;
    const result = (approvalId: string, outcome: ApprovalOutcome, body: string, approver?: string) =>
      append({
        kind: 'signal',
        type: 'tool-approval-result',
        body,
        attributes: { approvalId, outcome, ...(approver === undefined ? {} : { approver }) },
      });

    // The expiry: a framework timer (its type and name are reserved, so nobody else sends one).
    if (delivery.type === 'timer') {
      const name = delivery.attributes?.name ?? '';
      const approvalId = Object.keys(pending).find((id) => approvalTimerName(id) === name);
      if (approvalId === undefined) return; // not this gate's, or decided first
      setPending(({ [approvalId]: _expired, ...rest }) => rest);
      result(
        approvalId,
        'expired',
        `${gate.name} (${approvalId}) expired without a decision and was denied. Do not retry it; ask how to proceed.`,
      );
      return;
    }

    if (delivery.type !== 'tool-approval') return;
    // Only trusted server code decides: a client or the agent itself cannot approve.
    if (delivery.origin !== 'app') return;
    const { approvalId = '', decision, approver = 'An operator', argsDigest } = delivery.attributes ?? {};
    const call = pending[approvalId];
    if (!call) return; // not this gate's request, or already decided (or expired) first

    setPending(({ [approvalId]: _decided, ...rest }) => rest);
    if (call.expiresAt !== undefined) timers?.cancel(approvalTimerName(approvalId), true);

    if (argsDigest !== undefined && argsDigest !== call.argsDigest) {
      result(
        approvalId,
        'denied',
        `${approver}'s decision on ${gate.name} (${approvalId}) named other arguments than were requested; the call was denied. Do not retry it; ask how to proceed.`,
        approver,
      );
      return;
    }
    if (decision !== 'approve') {
      result(approvalId, 'denied', `${approver} denied ${gate.name} (${approvalId}). Do not retry it; ask how to proceed.`, approver);
      return;
    }
    try {
      const summary = await gate.execute(call.args as v.InferOutput<TInput>, approvalId);
      result(approvalId, 'approved', `${approver} approved ${gate.name} (${approvalId}). Result: ${summary}`, approver);
    } catch (error) {
      result(approvalId, 'failed', `${gate.name} (${approvalId}) was approved but failed: ${String(error)}`, approver);
    }
  });
}
