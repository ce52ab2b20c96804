/** The full lane's order: the files of test/lanes/slow-files.ts first, longest first; then vitest's own order. */
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";
import { SLOW_FILES } from "./slow-files.js";

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const order = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const at = SLOW_FILES.indexOf(relative(this.ctx.config.root, f.moduleId));
      return at < 0 ? SLOW_FILES.length : at;
    };
    // Array.prototype.sort is stable: the files not listed keep vitest's order.
    return order.sort((a, b) => rank(a) - rank(b));
  }
}
