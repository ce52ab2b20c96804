// Entry for the init tests: loads init-cli.ts through tsx, whatever the working directory.
import { register } from "tsx/esm/api";
register();
await import("./init-cli.ts");
