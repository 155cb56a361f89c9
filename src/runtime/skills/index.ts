/** Skills: definitions, packaging, catalog and framework tools. */
export {
  defineSkill,
  isValidatedSkillDefinition,
  unsafeSkillPath,
  validateSkillDefinition,
  SKILL_COMPATIBILITY_MAX,
  SKILL_DESCRIPTION_MAX,
  SKILL_NAME_MAX,
  SKILL_NAME_PATTERN,
} from './define-skill.ts';
export type {
  PackagedSkillFile,
  SkillDefinition,
  SkillFields,
  SkillReference,
} from './define-skill.ts';
export { DuplicateSkillError, SkillDefinitionValidationError, SkillNotRegisteredError } from './errors.ts';
export {
  PACKAGED_SKILLS_ROOT,
  collectSkills,
  isSkillReference,
  packageSkillDefinition,
  packagedFileBytes,
  packagedFileText,
  packagedSkillPath,
  resolvePackagedSkillFile,
  skillResourcePaths,
  synthesizeSkillMarkdown,
  validateSkillMount,
} from './package.ts';
export { createSkillReference, skillPackageId } from '../../shared/skill-format.ts';
export { SKILL_CATALOG_HEADING, SKILL_CATALOG_INSTRUCTION, skillCatalog, skillCatalogLine } from './catalog.ts';
export type { SkillCatalogEntry } from './catalog.ts';
export {
  SKILL_RESOURCES_LINE,
  activateSkillTool,
  hasSkillResources,
  readSkillResource,
  readSkillResourceTool,
  skillActivationText,
  skillMissText,
} from './tools.ts';
export type { LiveSkills } from './tools.ts';
