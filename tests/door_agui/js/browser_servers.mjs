// The chat page reloaded onto another server in the middle of a reply (two `onedoor serve`
// sharing one store, as behind a round-robin balancer): the page on server B reattaches
// to the run server A is writing and shows the whole reply.
// usage: node browser_servers.mjs PAGE_A_URL PAGE_B_URL -> prints one JSON object of observations.
import { chromium } from "playwright-core";

const [pageA, pageB] = process.argv.slice(2);
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
  const view = () =>
    page.evaluate(() => ({
      messages: [...document.querySelectorAll(".msg")].map((m) => [m.classList.contains("user") ? "user" : "assistant", m.textContent]),
      hash: location.hash,
    }));

  await page.goto(pageA);
  await ready();
  await page.fill("#input", "hello");
  await page.press("#input", "Enter");
  await page.waitForFunction(() => location.hash.startsWith("#thread="), null, { timeout: 30000 });
  await ready();
  await page.fill("#input", "/slow /long 100 a long story");
  await page.press("#input", "Enter");
  await page.waitForFunction(() => (document.querySelector(".msg.assistant.streaming")?.textContent.length ?? 0) > 0, null, { timeout: 30000 });
  out.beforeReload = await page.evaluate(() => document.querySelector(".msg.assistant.streaming").textContent);
  out.hash = await page.evaluate(() => location.hash);
  // the reload lands on server B
  await page.goto(pageB + out.hash);
  await page.waitForFunction(() => document.body.dataset.ready === "true", null, { timeout: 30000 });
  out.reattachedWhileRunning = await page.evaluate(() => document.body.dataset.state === "running");
  await ready();
  out.midReply = await view();
  await page.reload();
  await ready();
  out.afterRun = await view();
} catch (error) {
  console.error(JSON.stringify(out)); // what was seen before the failure
  throw error;
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
