/**
 * The seed's review_contract tool (Tools seed, "运行时工具", src/tools/review-contract.ts), verbatim:
 * a harness tool that stages its input in the agent's sandbox through `harness.sandbox` and runs a
 * focused, schema-validated model operation through `harness.prompt`.
 */
import { defineTool } from '@flue/runtime';
import * as v from 'valibot';

const Report = v.object({ riskLevel: v.picklist(['low', 'medium', 'high']), summary: v.string() });

export const reviewContract = defineTool({
  name: 'review_contract',
  description: '审查提供的合同并返回结构化风险报告。',
  input: v.object({ contract: v.string() }),
  harness: true,
  async run({ harness, data }) {
    await harness.sandbox.writeFile('contract.md', data.contract);
    const { data: report } = await harness.prompt('审查 contract.md 的非标准条款并评估风险。', { result: Report });
    return { output: report };
  },
});
