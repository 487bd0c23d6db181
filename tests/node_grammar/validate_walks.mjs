// Validates each line of the grammar walks files ({vocab, schema, text}), given as arguments, with ajv: the text must
// parse as JSON and validate against the schema. Exit 1 on any failure or an empty file.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
let Ajv, addFormats;
try {
  Ajv = require("ajv/dist/2020").default;
  addFormats = require("ajv-formats");
} catch {
  console.error("validate_walks: ajv missing; run npm ci --prefix tests/node_grammar");
  process.exit(1);
}
const lines = process.argv.slice(2).flatMap((file) => readFileSync(file, "utf8").split("\n").filter((l) => l.length > 0));
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
let failures = 0;
for (const line of lines) {
  const { vocab, schema, text } = JSON.parse(line);
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    console.error(`${vocab}: not JSON: ${text}`);
    failures++;
    continue;
  }
  const validate = ajv.compile(schema);
  if (!validate(value)) {
    console.error(`${vocab}: invalid: ${text}\n  ${ajv.errorsText(validate.errors)}`);
    failures++;
  }
}
console.log(`validate_walks: ${lines.length} walk outputs, ${failures} invalid`);
process.exit(failures > 0 || lines.length === 0 ? 1 : 0);
