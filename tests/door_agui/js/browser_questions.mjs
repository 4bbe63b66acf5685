// The chat page answering interrupts, in headless Chromium (Debian's chromium, driven by playwright-core).
// usage: node browser_questions.mjs PAGE_URL SHORT_TTL_PAGE_URL SCREENSHOT_PATH -> prints one JSON object.
import { chromium } from "playwright-core";

const [pageUrl, shortUrl, screenshot] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium",
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
  ],
});
const out = { consoleErrors: [], dialogs: [] };
const WAIT = { timeout: 30000 };

async function openPage(url) {
  const page = await browser.newPage({ viewport: { width: 960, height: 1100 } });
  page.on("pageerror", (e) => out.consoleErrors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && out.consoleErrors.push(m.text()));
  page.on("dialog", (d) => {
    out.dialogs.push(d.message());
    d.dismiss();
  });
  await page.goto(url);
  return page;
}

const say = async (page, text) => {
  await page.fill("#input", text);
  await page.press("#input", "Enter");
};
const stateIs = (page, state) => page.waitForFunction((s) => document.body.dataset.state === s, state, WAIT);
const replyStarting = (page, prefix) =>
  page.waitForFunction((p) => [...document.querySelectorAll(".msg.assistant")].some((m) => m.textContent.startsWith(p)), prefix, WAIT);
const lastReply = (page) => page.evaluate(() => [...document.querySelectorAll(".msg.assistant")].pop()?.textContent ?? null);
const card = (page, selector) =>
  page.evaluate((sel) => {
    const el = [...document.querySelectorAll(sel)].pop();
    if (!el) return null;
    const pick = (s) => el.querySelector(s)?.textContent ?? null;
    return {
      title: pick(".title"),
      prompt: pick(".prompt"),
      tool: pick(".tool-line .name"),
      args: pick("pre.args"),
      buttons: [...el.querySelectorAll(".actions button")].map((b) => b.textContent),
      fields: [...el.querySelectorAll(".field")].map((f) => ({ label: f.querySelector(".label").textContent, tag: f.querySelector("input, select").tagName.toLowerCase(), type: f.querySelector("input")?.type ?? null })),
      expiry: pick(".expiry"),
      outcome: pick(".outcome"),
    };
  }, selector);

try {
  const page = await openPage(pageUrl);

  // 1. An approval: the card shows the tool and its arguments; Approve resumes the stream.
  await say(page, '/ask deploy {"env": "prod"}');
  await page.waitForSelector(".interrupt.approval", WAIT);
  await stateIs(page, "waiting");
  out.approvalCard = await card(page, ".interrupt.approval");
  out.toolWaiting = await page.textContent(".tool .state");
  // the composer is blocked while a question waits
  await page.fill("#input", "not now");
  await page.press("#input", "Enter");
  out.sendDisabled = await page.isDisabled("#send");
  out.userBubbles = await page.locator(".msg.user").count();
  await page.screenshot({ path: screenshot, fullPage: true });
  await page.click(".interrupt.approval button.approve");
  await replyStarting(page, "Approved");
  await stateIs(page, "idle");
  out.approved = {
    reply: await lastReply(page),
    card: await card(page, ".interrupt.approval"),
    toolCards: await page.locator(".tool").count(),
    tool: await page.evaluate(() => {
      const c = document.querySelector(".tool");
      return { state: c.querySelector(".state").textContent, result: c.querySelector(".result")?.textContent ?? null };
    }),
    status: await page.textContent("#status"),
  };
  await page.fill("#input", "");

  // 2. Reject.
  await say(page, '/ask rm {"path": "/"}');
  await page.waitForFunction(() => document.querySelectorAll(".interrupt.approval:not(.answered)").length === 1, null, WAIT);
  await page.click(".interrupt.approval:not(.answered) button.reject");
  await replyStarting(page, "Not approved");
  await stateIs(page, "idle");
  out.rejected = {
    reply: await lastReply(page),
    toolState: await page.evaluate(() => [...document.querySelectorAll(".tool")].pop().querySelector(".state").textContent),
  };

  // 3. A form built from the responseSchema, answered in the page.
  const schema = {
    type: "object",
    properties: {
      colour: { type: "string", enum: ["red", "green"], title: "Colour" },
      count: { type: "integer", minimum: 1, description: "how many" },
      ok: { type: "boolean" },
      note: { type: "string" },
    },
    required: ["colour", "count"],
  };
  await say(page, `/question ${JSON.stringify({ prompt: "Deploy settings?", schema })}`);
  await page.waitForSelector(".interrupt.question", WAIT);
  out.formCard = await card(page, ".interrupt.question");
  await page.selectOption('.interrupt.question select[name="colour"]', "green");
  await page.fill('.interrupt.question input[name="count"]', "3");
  await page.check('.interrupt.question input[name="ok"]');
  await page.click(".interrupt.question button.submit");
  await replyStarting(page, "You answered");
  await stateIs(page, "idle");
  out.formReply = await lastReply(page);

  // 4. Hostile text from the server stays text: a tool name, arguments and a prompt full of markup.
  await say(page, '/ask <img/src=x/onerror=window.pwned=1> {"<b>bold</b>": "<script>window.pwned=2</script>"}');
  await page.waitForFunction(() => document.querySelectorAll(".interrupt.approval:not(.answered)").length === 1, null, WAIT);
  out.hostileCard = await card(page, ".interrupt.approval:not(.answered)");
  await page.click(".interrupt.approval:not(.answered) button.reject");
  await replyStarting(page, "Not approved (reject_once): did not run <img");
  await stateIs(page, "idle");
  await say(page, '/question <img src=x onerror="window.pwned=3"> <script>window.pwned=4</script>');
  await page.waitForFunction(() => document.querySelectorAll(".interrupt.question:not(.answered)").length === 1, null, WAIT);
  out.hostilePrompt = (await card(page, ".interrupt.question:not(.answered)")).prompt;
  await page.click(".interrupt.question:not(.answered) button.decline");
  await replyStarting(page, "No answer (decline)");
  await stateIs(page, "idle");
  out.injected = await page.evaluate(() => ({
    pwned: window.pwned ?? null,
    elements: document.querySelectorAll("#log img, #log script, #log b").length,
  }));
  await page.close();

  // 5. A question nobody answers in time (a server whose questions live a moment): the card
  // says so, the interrupt is abandoned, and the conversation goes on.
  const short = await openPage(shortUrl);
  await say(short, '/ask deploy {"env": "prod"}');
  await short.waitForSelector(".interrupt.approval", WAIT);
  await short.waitForSelector(".interrupt.approval.answered", WAIT);
  await stateIs(short, "idle");
  out.expired = {
    card: await card(short, ".interrupt.approval"),
    note: await short.evaluate(() => [...document.querySelectorAll(".note")].pop()?.textContent ?? null),
  };
  await say(short, "still there?");
  await replyStarting(short, "You said: still there?");
  await stateIs(short, "idle");
  out.expired.next = await lastReply(short);
  await short.close();
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
