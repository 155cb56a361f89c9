/**
 * Test doubles for the seed's `../shared/provisioning.ts`: a billing system that creates tenants
 * and a project service that seeds projects. Both record every side effect.
 */
export interface Project {
  name: string;
  template: string;
}

export const DEFAULT_PROJECTS: readonly Project[] = [
  { name: 'website', template: 'astro' },
  { name: 'api', template: 'hono' },
  { name: 'docs', template: 'starlight' },
];

let tenantCounter = 0;
const tenantCalls: string[] = [];
const seedCalls: { tenantId: string; project: string }[] = [];

export const billing = {
  calls: tenantCalls,
  async createTenant(customerId: string): Promise<{ id: string; customerId: string }> {
    tenantCalls.push(customerId);
    tenantCounter += 1;
    return { id: `tenant_${tenantCounter}`, customerId };
  },
};

export const projects = {
  calls: seedCalls,
  async seed(tenantId: string, project: Project): Promise<{ projectId: string }> {
    seedCalls.push({ tenantId, project: project.name });
    return { projectId: `${tenantId}/${project.name}` };
  },
};

export function resetProvisioning(): void {
  tenantCounter = 0;
  tenantCalls.length = 0;
  seedCalls.length = 0;
}
