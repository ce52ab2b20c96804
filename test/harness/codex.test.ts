// The real codex harness, installed from npm (scripts/install-harnesses.sh), against the real proxy.
import { describeRealHarness } from "./real-harness.js";

describeRealHarness({ harness: "codex", dialect: "openai-responses", model: "gpt-5-codex" });
