/**
 * reins/testing: what a task family's test needs. `describeFamily(dir)` registers the family's
 * checks with Node's test runner; `familyChecks(dir)` gives the same checks to any other runner;
 * the helpers below are the parts they are made of.
 */
export {
  constantJudge,
  explain,
  familyChecks,
  familyPaths,
  listMistakes,
  loadFamilyTasks,
  modelineSchema,
  solveAndVerify,
  type FamilyCheck,
  type FamilyCheckOptions,
  type FamilyLocation,
  type FamilyPaths,
  type ResolvedTask,
  type VerifierResult,
} from "./family.js";
export { describeFamily } from "./node-test.js";
