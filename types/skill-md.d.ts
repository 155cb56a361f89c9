/**
 * Ambient module types for Markdown imports in agent code, as `flue build` bundles them.
 * Reference them once per project:
 *
 *   /// <reference types="@flue/runtime/skill-md" />
 *
 * or list "@flue/runtime/skill-md" in tsconfig `compilerOptions.types`.
 *
 * - `import skill from './skills/<dir>/SKILL.md'` is the packaged skill directory: a
 *   `SkillReference` to pass to `useSkill()`. It must be a static import.
 * - Any other `.md` import is the file's text (for `useInstruction()`, a returned instruction
 *   document, or `defineSkill({ instructions })`).
 *
 * The `SKILL.md` pattern is declared first: TypeScript picks the first of equally specific
 * wildcard patterns, so `SKILL.md` imports get the reference type, not `string`.
 */
declare module '*/SKILL.md' {
  const skill: import('@flue/runtime').SkillReference;
  export default skill;
}

declare module '*.md' {
  const text: string;
  export default text;
}
