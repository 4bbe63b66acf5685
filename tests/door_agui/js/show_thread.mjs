// Open the chat page on one stored thread (PAGE_URL ends with #thread=ID) in headless Chromium
// and print what it shows: the conversation's messages, in order, as [role, text].
// usage: node show_thread.mjs PAGE_URL MESSAGE_COUNT -> prints one JSON object.
import { chromium } from "playwright-core";

const [pageUrl, count] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run"],
});
const out = { consoleErrors: [] };
try {
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  page.on("pageerror", (e) => out.consoleErrors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && out.consoleErrors.push(m.text()));
  await page.goto(pageUrl);
  await page.waitForFunction(
    (n) => document.body.dataset.ready === "true" && document.querySelectorAll(".msg").length >= n,
    Number(count),
    { timeout: 30000 },
  );
  out.messages = await page.evaluate(() =>
    [...document.querySelectorAll(".msg")].map((m) => [m.classList.contains("user") ? "user" : "assistant", m.textContent]));
  out.current = await page.evaluate(() => document.querySelector("#thread-list li.current")?.dataset.threadId ?? null);
} catch (err) {
  out.error = String(err && err.stack || err);
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
