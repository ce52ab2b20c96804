// reins-agent (shipped with reins, run with this node) against the real proxy.
import { describeRealHarness } from "./real-harness.js";

describeRealHarness({ harness: "reins-agent", dialect: "openai-chat", model: "reins-policy" });
