'use agent';
import { useModel, usePersistentState, useTool } from '@flue/runtime';
import * as v from 'valibot';
import { approvals } from '../shared/approvals.ts';
import { publishRelease } from '../tools/publish-release.ts';

export function ReleaseManager() {
  useModel('anthropic/claude-sonnet-4-6');
  const [approved, setApproved] = usePersistentState('approved', false);

  useTool({
    name: 'record_approval',
    description: '记录此版本的操作员批准代码。',
    input: v.object({ code: v.string() }),
    async run({ data }) {
      if (!(await approvals.verify(data.code))) return '无效的批准代码。';
      setApproved(true);
      return '批准已记录。发布工具现在可用。';
    },
  });

  if (approved) useTool(publishRelease);

  return '准备发布。发布在操作员批准后解锁。';
}
