// Constrained decoding through the API with the official openai SDK: response_format json_schema
// (strict) replies always parse and validate with ajv (100 samples at temperature 1 on a random-weight
// model, which on its own would almost never write JSON), json_object replies are JSON objects, the
// `grammar` extension (GBNF) holds, streamed replies equal the non-streamed ones for a seed, and bad
// schemas or grammars are 400s naming the field, the server still serving.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Ajv from 'ajv';
import OpenAI from 'openai';
import { makeModelDir, startServer } from './server_harness.mjs';

const modelDir = makeModelDir();
let server, client;
before(async () => {
  server = await startServer(modelDir);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 });
});
after(async () => { assert.equal(await server.stop(), 0); });

// Bounded, so that every reply ends within max_tokens (the byte tokenizer spends a token per byte).
const PERSON = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 6 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    pet: { enum: ['cat', 'dog', 'none'] },
    tags: { type: 'array', items: { type: 'string', maxLength: 3 }, maxItems: 2 },
    married: { type: 'boolean' },
  },
  required: ['name', 'age', 'pet', 'tags', 'married'],
  additionalProperties: false,
};

const ask = (extra) => client.chat.completions.create({
  model: 'tiny', messages: [{ role: 'user', content: 'Describe a person.' }], max_tokens: 120, temperature: 1, ...extra,
});

test('json_schema strict: 100 replies at temperature 1 parse and validate', async () => {
  const validate = new Ajv({ strict: false }).compile(PERSON);
  const rf = { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: PERSON } };
  for (let batch = 0; batch < 10; ++batch) {
    const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => ask({ response_format: rf, seed: batch * 10 + i })));
    for (const r of replies) {
      assert.equal(r.choices[0].finish_reason, 'stop', r.choices[0].message.content);
      const value = JSON.parse(r.choices[0].message.content);
      assert.ok(validate(value), `${r.choices[0].message.content}: ${JSON.stringify(validate.errors)}`);
      assert.deepEqual(Object.keys(value), Object.keys(PERSON.properties), 'properties in schema order');
    }
  }
});

test('json_object: a JSON object; streamed equals non-streamed for a seed', async () => {
  const body = { response_format: { type: 'json_object' }, max_tokens: 40, seed: 3 };
  const whole = await ask(body);
  const text = whole.choices[0].message.content;
  if (whole.choices[0].finish_reason === 'stop') assert.equal(typeof JSON.parse(text), 'object');
  assert.ok(text.startsWith('{'), text);
  const stream = await ask({ ...body, stream: true });
  let streamed = '';
  for await (const chunk of stream) streamed += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(streamed, text);
});

test('grammar (GBNF) extension', async () => {
  const grammar = 'root ::= ("yes" | "no") " " [0-9] [0-9]?';
  for (let seed = 0; seed < 10; ++seed) {
    const r = await ask({ grammar, seed, max_tokens: 10 });
    assert.match(r.choices[0].message.content, /^(yes|no) [0-9][0-9]?$/);
    assert.equal(r.choices[0].finish_reason, 'stop');
  }
  const res = await fetch(`${server.url}/v1/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: 'Answer:', grammar: 'root ::= "ok"', max_tokens: 5, temperature: 1 }),
  });
  assert.equal((await res.json()).choices[0].text, 'ok');
});

test('bad schemas and grammars are 400s naming the field', async () => {
  const cases = [
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', patternProperties: { a: {} } } } } },
      'response_format.json_schema.schema', /patternProperties/],
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'strng' } } } },
      'response_format.json_schema.schema', /strng/],
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: 5 } } }, 'response_format.json_schema.schema', /object/],
    [{ response_format: { type: 'xml' } }, 'response_format.type', /json_schema/],
    [{ grammar: 'root ::= "a' }, 'grammar', /./],
    [{ grammar: 'root ::= "a"', response_format: { type: 'json_object' } }, 'response_format', /both/],
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: nest(40) } } }, 'response_format.json_schema.schema', /deep|depth|nest/],
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', maxLength: 100000 } } } },
      'response_format.json_schema.schema', /./],
  ];
  for (const [extra, param, message] of cases) {
    try {
      await ask(extra);
      assert.fail(`accepted: ${JSON.stringify(extra).slice(0, 80)}`);
    } catch (e) {
      assert.ok(e instanceof OpenAI.BadRequestError, String(e));
      assert.equal(e.param, param, e.message);
      assert.match(e.message, message);
    }
  }
  const ok = await ask({ max_tokens: 2 });
  assert.equal(ok.choices.length, 1, 'still serving');
});

function nest(depth) {
  let s = { type: 'integer' };
  for (let i = 0; i < depth; ++i) s = { type: 'array', items: s };
  return s;
}
