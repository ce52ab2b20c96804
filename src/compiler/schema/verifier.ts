/** Verifier: a reusable verifier document (checks, script, rubric, combine). */
import { documentSchema } from "./common.js";
import { VerifierSpecSchema } from "./checks.js";

export const VerifierDocument = documentSchema("Verifier", VerifierSpecSchema, "A Verifier: scores the final workspace.");
