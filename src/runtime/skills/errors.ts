/** Skill errors. */
import type { ValidationIssue } from '../../shared/issues.ts';
import { skillIssuesMessage } from '../../shared/skill-format.ts';
import { FlueError } from '../common/errors.ts';

/** An invalid skill definition or SKILL.md; `meta.issues` lists every problem found, not just the first. */
export class SkillDefinitionValidationError extends FlueError {
  declare readonly meta: { issues: ValidationIssue[] };

  constructor(subject: string, issues: ValidationIssue[]) {
    super('skill_definition_validation', {
      message: skillIssuesMessage(subject, issues),
      meta: { issues },
    });
    this.name = 'SkillDefinitionValidationError';
  }
}

/** Two mounts with the same skill name in one render. */
export class DuplicateSkillError extends SkillDefinitionValidationError {
  constructor(name: string) {
    super(`"${name}"`, [{ message: `skill "${name}" is mounted twice in one render; skill names must be unique`, path: ['name'] }]);
    this.name = 'DuplicateSkillError';
  }
}

/** `harness.skill(name)` for a skill that is not mounted (answered with a `ref`). */
export class SkillNotRegisteredError extends FlueError {
  constructor(name: string, available: readonly string[]) {
    super('skill_not_registered', {
      message: `Skill "${name}" is not registered.`,
      details: available.length > 0 ? `Available skills: ${available.join(', ')}.` : 'No skills are mounted.',
    });
    this.name = 'SkillNotRegisteredError';
  }
}
