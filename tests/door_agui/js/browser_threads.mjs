// The chat page's threads in headless Chromium (Debian's chromium, driven by playwright-core):
// the thread list (new / switch / delete), a reload restoring the open conversation, and a
// reload in the middle of a reply showing the whole reply once it ends.
// usage: node browser_threads.mjs PAGE_URL SCREENSHOT_PATH -> prints one JSON object of observations.
import { chromium } from "playwright-core";

const [pageUrl, screenshot] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run"],
});
const out = { consoleErrors: [], followed: [] };
try {
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  page.on("pageerror", (e) => out.consoleErrors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && out.consoleErrors.push(m.text()));
  page.on("request", (r) => r.url().includes("/runs/") && out.followed.push(r.url()));
  const ready = () =>
    page.waitForFunction(
      () => document.body.dataset.ready === "true" && !["running", "waiting"].includes(document.body.dataset.state),
      null,
      { timeout: 30000 },
    );
  const say = async (text, reply) => {
    await page.fill("#input", text);
    await page.press("#input", "Enter");
    await page.waitForFunction(
      (r) => [...document.querySelectorAll(".msg.assistant")].some((m) => m.textContent.startsWith(r)),
      reply,
      { timeout: 30000 },
    );
    await ready();
    // the list is refreshed after the turn: wait for the open thread to be in it
    await page.waitForFunction(() => document.querySelector("#thread-list li.current"), null, { timeout: 30000 });
  };
  const view = () =>
    page.evaluate(() => ({
      messages: [...document.querySelectorAll(".msg")].map((m) => [m.classList.contains("user") ? "user" : "assistant", m.textContent]),
      tools: document.querySelectorAll(".tool").length,
      threads: [...document.querySelectorAll("#thread-list li")].map((li) => ({
        id: li.dataset.threadId,
        title: li.querySelector(".open").textContent,
        current: li.classList.contains("current"),
      })),
      hash: location.hash,
      listVisible: !document.querySelector("#threads").hidden,
    }));

  await page.goto(pageUrl);
  await ready();
  // 1. two turns in the first conversation
  await say("first thread hello", "You said: first thread hello");
  await say("second turn", "You said: second turn");
  out.first = await view();
  // 2. a new conversation
  await page.click("#new-thread");
  out.afterNew = await view();
  await say("another conversation", "You said: another conversation");
  out.second = await view();
  // 3. a reload restores the open conversation (URL hash), and so does the bare URL (localStorage)
  await page.reload();
  await ready();
  out.reloaded = await view();
  await page.goto(pageUrl.replace(/\?.*$/, ""));
  await ready();
  out.fromStorage = await view();
  // 4. switch back to the first conversation, then delete the second
  await page.click(`#thread-list li[data-thread-id="${out.first.threads[0].id}"] .open`);
  await page.waitForFunction(() => document.querySelectorAll(".msg").length === 4, null, { timeout: 30000 });
  out.switched = await view();
  await page.click(`#thread-list li[data-thread-id="${out.second.threads[0].id}"] .delete`);
  await page.waitForFunction(() => document.querySelectorAll("#thread-list li").length === 1, null, { timeout: 30000 });
  out.deleted = await view();
  // 5. hostile text from the server stays text (a title, a message)
  await page.click("#new-thread");
  await say('<img src=x onerror="window.__pwned=1">', "You said: <img");
  out.hostile = { ...(await view()), pwned: await page.evaluate(() => window.__pwned ?? null), images: await page.evaluate(() => document.querySelectorAll("img").length) };
  // 6. a reload in the middle of a reply: the page reattaches and shows the whole reply
  await page.click(`#thread-list li[data-thread-id="${out.first.threads[0].id}"] .open`);
  await page.waitForFunction(() => document.querySelectorAll(".msg").length === 4, null, { timeout: 30000 });
  await page.fill("#input", "/slow /long 100 a long story");
  await page.press("#input", "Enter");
  await page.waitForFunction(() => (document.querySelector(".msg.assistant.streaming")?.textContent.length ?? 0) > 0, null, { timeout: 30000 });
  out.beforeReload = await page.evaluate(() => document.querySelector(".msg.assistant.streaming").textContent);
  await page.reload();
  await page.waitForFunction(() => document.body.dataset.ready === "true", null, { timeout: 30000 });
  out.reattachedWhileRunning = await page.evaluate(() => document.body.dataset.state === "running");
  await ready();
  out.midReply = await view();
  await page.reload();
  await ready();
  out.afterRun = await view();
  await page.screenshot({ path: screenshot, fullPage: true });
} catch (error) {
  console.error(JSON.stringify(out)); // what was seen before the failure
  throw error;
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
