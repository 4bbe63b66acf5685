// The chat page in headless Chromium (Debian's chromium, driven by playwright-core).
// usage: node browser.mjs PAGE_URL SCREENSHOT_PATH -> prints one JSON object of observations.
import { chromium } from "playwright-core";

const [pageUrl, screenshot] = process.argv.slice(2);
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
const out = { consoleErrors: [] };
try {
  const page = await browser.newPage({ viewport: { width: 960, height: 1000 } });
  page.on("pageerror", (e) => out.consoleErrors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && out.consoleErrors.push(m.text()));
  await page.goto(pageUrl);
  const idle = () => page.waitForFunction(() => document.body.dataset.state !== "running", null, { timeout: 20000 });
  const say = async (text) => {
    await page.fill("#input", text);
    await page.press("#input", "Enter");
  };
  out.title = await page.title();
  // opened with ?token=: the server set an HttpOnly cookie and the page dropped the token from its URL
  out.url = page.url();
  out.pageCookies = await page.evaluate(() => document.cookie);
  out.cookies = (await page.context().cookies()).map((c) => ({ name: c.name, httpOnly: c.httpOnly, sameSite: c.sameSite }));

  // 1. A streamed reply: sample the reply's length while it grows.
  await say("/slow tell me about the many doors of this house");
  await page.waitForSelector(".msg.assistant", { timeout: 20000 });
  const lengths = [];
  for (let i = 0; i < 200; i++) {
    const { len, state } = await page.evaluate(() => ({
      len: document.querySelector(".msg.assistant")?.textContent.length ?? 0,
      state: document.body.dataset.state,
    }));
    lengths.push(len);
    if (state !== "running") break;
    await page.waitForTimeout(40);
  }
  await idle();
  out.lengths = lengths;
  out.reply = await page.textContent(".msg.assistant");
  out.tool = await page.evaluate(() => {
    const card = document.querySelector(".tool");
    return card && { name: card.querySelector(".name").textContent, args: card.querySelector(".args").textContent, result: card.querySelector(".result")?.textContent, state: card.querySelector(".state").textContent };
  });
  out.reasoning = await page.evaluate(() => {
    const d = document.querySelector("details.reasoning");
    return d && { open: d.open, text: d.textContent };
  });

  // 2. A failing backend shows an error.
  await say("/fail please");
  await page.waitForSelector(".error", { timeout: 20000 });
  await idle();
  out.error = await page.textContent(".error");

  // 2b. A request the server refuses (over the body limit) shows its reason and stays out of the history.
  await page.evaluate((text) => {
    document.querySelector("#input").value = text;
    document.querySelector("#composer").requestSubmit();
  }, "x".repeat(70000));
  await page.waitForFunction(() => document.querySelectorAll(".error").length >= 2, null, { timeout: 20000 });
  await idle();
  out.refused = await page.evaluate(() => [...document.querySelectorAll(".error")].pop().textContent);
  out.unsent = await page.evaluate(() => document.querySelectorAll(".msg.user.unsent").length);

  // 3. A frontend tool answered by the page itself, then the agent continues.
  await say("/call browser_time {}");
  await page.waitForFunction(() => [...document.querySelectorAll(".msg.assistant")].some((m) => m.textContent.startsWith("The tool returned:")), null, { timeout: 20000 });
  await idle();
  out.frontendTool = await page.evaluate(() => {
    const cards = [...document.querySelectorAll(".tool")];
    const card = cards.find((c) => c.querySelector(".name").textContent === "browser_time");
    const replies = [...document.querySelectorAll(".msg.assistant")].map((m) => m.textContent);
    return { result: card?.querySelector(".result")?.textContent, reply: replies[replies.length - 1] };
  });

  // 4. Stop a long run.
  await say("/slow /long 2000 a story without end");
  await page.waitForFunction(() => document.querySelectorAll(".msg.assistant").length >= 4, null, { timeout: 20000 });
  await page.waitForTimeout(300);
  out.stopVisible = await page.isVisible("#stop");
  await page.click("#stop");
  await page.waitForSelector(".note", { timeout: 20000 });
  await idle();
  out.note = await page.textContent(".note");
  out.status = await page.textContent("#status");
  await page.screenshot({ path: screenshot, fullPage: true });
  out.screenshot = screenshot;
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
