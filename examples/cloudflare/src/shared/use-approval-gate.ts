import { useAgentStart, useDelivery, usePersistentState, useTool } from '@flue/runtime';
import * as v from 'valibot';

type PendingCall = { args: unknown; requestedAt: string };

export function useApprovalGate<TInput extends v.GenericSchema<Record<string, unknown>>>(gate: {
  name: string;
  description: string;
  input: TInput;
  /** 返回 false 可以不经询问直接执行调用。省略则总是需要询问。 */
  needsApproval?: (args: v.InferOutput<TInput>) => boolean;
  /** 副作用函数。返回给模型的摘要;`approvalId` 兼作幂等键。 */
  execute: (args: v.InferOutput<TInput>, approvalId: string) => Promise<string>;
}) {
  const [pending, setPending] = usePersistentState<Record<string, PendingCall>>(`approvals:${gate.name}`, {});
  const delivery = useDelivery();

  useTool({
    name: gate.name,
    description: `${gate.description} Some calls need operator approval before they run.`,
    input: gate.input,
    async run({ data, toolCallId }) {
      if (gate.needsApproval && !gate.needsApproval(data)) {
        return { output: { status: 'executed', result: await gate.execute(data, toolCallId) } };
      }
      setPending((previous) => ({
        ...previous,
        [toolCallId]: { args: data, requestedAt: new Date().toISOString() },
      }));
      return { output: { status: 'pending_approval', approvalId: toolCallId }, terminate: true };
    },
  });

  useAgentStart(async ({ append }) => {
    if (delivery.kind !== 'signal' || delivery.type !== 'tool-approval') return;
    const { approvalId = '', decision, approver = 'An operator' } = delivery.attributes ?? {};
    const call = pending[approvalId];
    if (!call) return; // not this gate's request, or already decided

    setPending(({ [approvalId]: _decided, ...rest }) => rest);

    if (decision !== 'approve') {
      append({
        kind: 'signal',
        type: 'tool-approval-result',
        body: `${approver} denied ${gate.name} (${approvalId}). Do not retry it; ask how to proceed.`,
      });
      return;
    }
    try {
      const result = await gate.execute(call.args as v.InferOutput<TInput>, approvalId);
      append({
        kind: 'signal',
        type: 'tool-approval-result',
        body: `${approver} approved ${gate.name} (${approvalId}). Result: ${result}`,
      });
    } catch (error) {
      append({
        kind: 'signal',
        type: 'tool-approval-result',
        body: `${gate.name} (${approvalId}) was approved but failed: ${String(error)}`,
      });
    }
  });
}
