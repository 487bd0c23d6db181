// The chat page in headless Chromium against the real `hichat serve` with the default model (a 1024-token
// context): a long conversation that has to drop its oldest turns, the stop and new-chat buttons, and the
// API key box. Saves a screenshot as an artifact.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { DEFAULT_MODEL, startServer } from './server_harness.mjs';

let server, keyed, browser, context;
const artifacts = process.env.HICHAT_ARTIFACTS_DIR || '.';
const TURN_MS = 300000;  // generous: a bound on a hung page, not a latency check
const KEY = 'sk-page-test';

before(async () => {
  server = await startServer(DEFAULT_MODEL);
  keyed = await startServer(DEFAULT_MODEL, ['--api-key', KEY]);
  context = (await (await fetch(server.url + '/v1/models')).json()).data[0].max_model_len;
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});
after(async () => {
  await browser?.close();
  assert.equal(await server.stop(), 0);
  assert.equal(await keyed.stop(), 0);
});

// A fresh page (its own browser context, so no saved key) that records every chat request and its status.
async function openPage(srv, modelText = 'default') {
  const page = await browser.newPage();
  const calls = [];
  page.on('request', (r) => {
    if (r.url().endsWith('/v1/chat/completions')) calls.push({ body: JSON.parse(r.postData()), request: r });
  });
  page.on('response', (r) => {
    const call = calls.find((c) => c.request === r.request());
    if (call) call.status = r.status();
  });
  await page.goto(srv.url + '/');
  await page.waitForFunction((t) => document.getElementById('model').textContent === t, modelText);
  return { page, calls };
}

// Types a message, presses Enter and waits until the page is ready for the next one: the turn is in the log,
// or an error is (a failed turn leaves the log and goes back into the input box).
async function say(page, text) {
  const counts = () => [document.querySelectorAll('.msg.user').length, document.querySelectorAll('.msg.error').length];
  const [users, errors] = await page.evaluate(counts);
  await page.fill('#input', text);
  await page.keyboard.press('Enter');
  await page.waitForFunction(([u, e]) => !document.getElementById('send').disabled &&
    (document.querySelectorAll('.msg.user').length === u + 1 || document.querySelectorAll('.msg.error').length > e),
  [users, errors], { timeout: TURN_MS });
}
const lastReply = (page) => page.locator('.msg.assistant').last();
const replyText = (page) => lastReply(page).locator('.text').textContent();

// Clicks the named button from inside the page as soon as the next reply bubble shows its first streamed text,
// before the page reads any further: the outcome does not depend on how fast the model is.
async function clickOnFirstToken(page, buttonId) {
  await page.evaluate((id) => {
    const log = document.getElementById('log');
    const before = log.querySelectorAll('.msg.assistant').length;
    const watch = new MutationObserver(() => {
      const texts = log.querySelectorAll('.msg.assistant .text');
      if (texts.length > before && texts[texts.length - 1].textContent.length > 0) {
        watch.disconnect();
        document.getElementById(id).click();
      }
    });
    watch.observe(log, { subtree: true, childList: true, characterData: true });
  }, buttonId);
}

async function promptTokens(messages) {
  const r = await fetch(server.url + '/v1/chat/completions', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages, max_tokens: 1 }),
  });
  assert.equal(r.status, 200);
  return (await r.json()).usage.prompt_tokens;
}

const VERSES = [
  'In the beginning God created the heaven and the earth.',
  'And the earth was without form, and void; and darkness was upon the face of the deep.',
  'And God said, Let there be light: and there was light.',
  'And God saw the light, that it was good: and God divided the light from the darkness.',
  'The LORD is my shepherd; I shall not want.',
  'He maketh me to lie down in green pastures: he leadeth me beside the still waters.',
  'To every thing there is a season, and a time to every purpose under the heaven.',
];
// About 700 characters (some 175 tokens): any seven of them overflow what the page sends, whatever the replies.
const message = (i) => `Question ${i + 1}. ` +
  [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((k) => VERSES[(i + k) % VERSES.length]).join(' ') + ' What sayest thou?';

test('typing a message streams a reply into the page', async () => {
  const { page } = await openPage(server);
  assert.match(await page.textContent('#context'), new RegExp(`${context}-token context`));
  await say(page, 'Hello there!');
  assert.ok((await replyText(page)).length > 0);
  assert.equal(await page.textContent('.msg.user .text'), 'Hello there!');
  fs.mkdirSync(artifacts, { recursive: true });
  const shot = path.join(artifacts, 'chat_page.png');
  await page.screenshot({ path: shot, fullPage: true });
  assert.ok(fs.statSync(shot).size > 1000);
  await page.close();
});

// Fourteen turns through the page, the first seven with no reply cap and the rest with a 256-token cap: no error,
// no empty reply; the oldest turns are dropped, the newest sent in order, and each answered request fits with
// room for a reply.
test('a 14-turn conversation drops the oldest turns, and every request fits, with and without a reply cap',
     async () => {
  const { page, calls } = await openPage(server);
  const turns = 14, capFrom = 7, cap = 256;
  for (let i = 0; i < turns; i++) {
    await page.fill('#max-reply', i < capFrom ? '' : String(cap));
    await say(page, message(i));
    assert.equal(await page.locator('.msg.error').count(), 0, `an error is shown after turn ${i + 1}`);
    assert.ok((await replyText(page)).length > 0, `reply ${i + 1} is empty`);
    assert.equal(await page.locator('.msg.assistant').count(), i + 1);
  }
  const answered = calls.filter((c) => c.status === 200);
  assert.equal(answered.length, turns);
  for (const [i, { body }] of answered.entries()) {
    const m = body.messages;
    assert.deepEqual(m.at(-1), { role: 'user', content: message(i) });
    // The turns sent are the newest ones, in order: a suffix of the conversation.
    const first = Number(m[0].content.match(/^Question (\d+)\./)[1]) - 1;
    assert.equal(m.length, 2 * (i - first) + 1);
    m.forEach((msg, k) => assert.equal(msg.role, k % 2 ? 'assistant' : 'user'));
    // What the page asked for fits, and leaves room for a reply.
    const prompt = await promptTokens(m);
    if (i < capFrom) assert.equal(body.max_tokens, undefined);
    else assert.ok(body.max_tokens === undefined || (body.max_tokens === cap && prompt + cap <= context),
                   `turn ${i + 1}: max_tokens ${body.max_tokens} after a ${prompt}-token prompt`);
    assert.ok(context - prompt >= 128, `turn ${i + 1}: only ${context - prompt} tokens left for the reply`);
  }
  const capped = answered.filter((c) => c.body.max_tokens === cap).length;
  assert.ok(capped > 0, 'the cap was never sent');
  assert.equal(answered[0].body.messages.length, 1);
  assert.ok(answered[capFrom - 1].body.messages.length < 2 * capFrom - 1, 'no turn dropped without a cap');
  assert.ok(answered.at(-1).body.messages.length < 2 * (turns - capFrom) + 1, 'no turn dropped with a cap');
  assert.ok(await page.locator('.msg.notice', { hasText: 'Earlier turns were dropped' }).count() >= 2);
  assert.ok(await page.locator('.msg.dropped').count() >= 2);
  fs.mkdirSync(artifacts, { recursive: true });
  await page.screenshot({ path: path.join(artifacts, 'chat_page_long.png'), fullPage: true });
  console.log(`# ${calls.length} requests for ${turns} turns, ${capped} with max_tokens ${cap}; ` +
              `messages sent in the last: ${answered.at(-1).body.messages.length}`);
  await page.close();
});

test('stop ends the stream, keeps the partial reply marked stopped, and the next turn works', async () => {
  const { page, calls } = await openPage(server);
  await page.fill('#max-reply', '');  // no cap: the page leaves max_tokens out, the reply may fill the context
  await clickOnFirstToken(page, 'stop');
  await say(page, 'Tell me of the flood, and of Noah, and of all the beasts that went into the ark.');
  const stopped = lastReply(page);
  assert.equal(await stopped.getAttribute('class'), 'msg assistant stopped');
  assert.equal(await stopped.locator('.note').textContent(), 'stopped');
  const partial = await replyText(page);
  assert.ok(partial.length > 0);
  assert.equal(calls[0].body.max_tokens, undefined);
  assert.equal(await page.isDisabled('#stop'), true);

  await say(page, 'And what came after?');
  assert.equal(await page.locator('.msg.error').count(), 0);
  assert.ok((await replyText(page)).length > 0);
  assert.equal(await lastReply(page).locator('.note').count(), 0);
  assert.deepEqual(calls.at(-1).body.messages[1], { role: 'assistant', content: partial });
  await page.close();
});

test('new chat clears the history, also while a reply is streaming', async () => {
  const { page, calls } = await openPage(server);
  await say(page, 'Who was Abraham?');
  await page.click('#new-chat');
  assert.equal(await page.locator('#log > *').count(), 0);
  await say(page, 'Who was Isaac?');
  assert.deepEqual(calls.at(-1).body.messages, [{ role: 'user', content: 'Who was Isaac?' }]);

  await clickOnFirstToken(page, 'new-chat');
  await page.fill('#input', 'Who was Jacob?');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.getElementById('log').children.length === 0 &&
                                   !document.getElementById('send').disabled, null, { timeout: TURN_MS });
  assert.equal(await page.isDisabled('#stop'), true);
  await say(page, 'Who was Joseph?');
  assert.deepEqual(calls.at(-1).body.messages, [{ role: 'user', content: 'Who was Joseph?' }]);
  assert.ok((await replyText(page)).length > 0);
  assert.equal(await page.locator('#log > *').count(), 2);
  await page.close();
});

test('with no key, a 401 points at the key box; with the key, the chat works', async () => {
  const { page } = await openPage(keyed, 'needs an API key');
  assert.equal(await page.getAttribute('#key', 'class'), 'attention');
  await page.fill('#input', 'Hello?');
  await page.keyboard.press('Enter');
  await page.waitForSelector('.msg.error');
  const error = await page.textContent('.msg.error');
  assert.match(error, /needs an API key.*"API key" box/);
  assert.doesNotMatch(error, /Authorization|Bearer|curl|header/i);
  assert.equal(await page.evaluate(() => document.activeElement.id), 'key');
  assert.equal(await page.getAttribute('#key', 'aria-invalid'), 'true');
  assert.equal(await page.locator('.msg.user').count(), 0);
  assert.equal(await page.inputValue('#input'), 'Hello?');

  await page.fill('#key', 'sk-wrong');
  await page.press('#key', 'Tab');
  await page.click('#send');
  await page.waitForFunction(() => document.querySelectorAll('.msg.error').length === 2);
  assert.match(await page.locator('.msg.error').last().textContent(), /refused this API key/);

  await page.fill('#key', KEY);
  await page.press('#key', 'Tab');
  await page.waitForFunction(() => document.getElementById('model').textContent === 'default');
  assert.equal(await page.getAttribute('#key', 'class'), '');
  await page.click('#send');
  await page.waitForFunction(() => document.querySelector('.msg.assistant .text')?.textContent.length > 0 &&
                                   !document.getElementById('send').disabled, null, { timeout: TURN_MS });
  assert.equal(await page.textContent('.msg.user .text'), 'Hello?');
  await page.close();
});
