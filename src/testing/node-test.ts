/** `describeFamily` for Node's own test runner (`node --test`): one test per family check. */
import { describe, it } from "node:test";
import { familyChecks, type FamilyCheckOptions, type FamilyLocation } from "./family.js";

export function describeFamily(location: FamilyLocation, opts: FamilyCheckOptions = {}): void {
  const { family, checks } = familyChecks(location, opts);
  describe(`task family ${family}`, () => {
    for (const check of checks) it(check.name, () => check.run());
  });
}
