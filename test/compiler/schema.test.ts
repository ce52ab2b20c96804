import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Ajv } from "ajv";
import { parseAllDocuments } from "yaml";
import { describe, expect, it } from "vitest";
import { generateJsonSchemas, serializeSchema } from "../../src/compiler/index.js";

const schemas = generateJsonSchemas();

function ajvFor() {
  const ajv = new Ajv({ allErrors: true, strict: false });
  for (const s of schemas) ajv.addSchema(s.json);
  return ajv.getSchema("https://reins.dev/schemas/v1alpha1/any.schema.json")!;
}

function yamlFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && e.name.endsWith(".yaml")) out.push(join(e.parentPath ?? (e as any).path, e.name));
  }
  return out.sort();
}

describe("JSON Schemas", () => {
  it("the committed schemas/ are the generated ones", () => {
    for (const s of schemas) {
      expect(readFileSync(join("schemas", s.path), "utf8"), s.path).toBe(serializeSchema(s.json));
    }
  });

  it("are draft-07, one per kind plus any.schema.json", () => {
    expect(schemas.map((s) => s.path).sort()).toContain("v1alpha1/any.schema.json");
    expect(schemas.length).toBe(12);
    for (const s of schemas) expect(s.json.$schema).toBe("http://json-schema.org/draft-07/schema#");
  });

  it("accept every shipped spec and example (editors agree with reins validate)", () => {
    const validate = ajvFor();
    for (const file of [...yamlFiles("specs"), ...yamlFiles("examples"), ...yamlFiles("test/fixtures/valid")]) {
      for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
        const v = doc.toJS();
        if (v === null) continue;
        const ok = validate(v);
        expect(ok, `${file}: ${JSON.stringify(validate.errors?.slice(0, 3))}`).toBe(true);
      }
    }
  });

  it("reject schema-level mistakes that reins validate rejects", () => {
    const validate = ajvFor();
    for (const f of ["unknown-field", "unknown-kind", "wrong-type", "missing-field", "bad-name", "unknown-check", "bad-enum", "dialect"]) {
      const text = readFileSync(`test/fixtures/invalid/${f}.yaml`, "utf8");
      const v = parseAllDocuments(text)[0]!.toJS();
      expect(validate(v), f).toBe(false);
    }
  });

  it("every example starts with a yaml-language-server modeline", () => {
    for (const file of [...yamlFiles("examples"), ...yamlFiles("specs")]) {
      const first = readFileSync(file, "utf8").split("\n")[0]!;
      expect(first, file).toMatch(/^# yaml-language-server: \$schema=\S+\.schema\.json$/);
    }
  });
});
