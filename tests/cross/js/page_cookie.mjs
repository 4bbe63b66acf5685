// The page cookie in headless Chromium (playwright-core from tests/door_agui/js): the chat page
// on 127.0.0.1 opens with ?token=, streams a reply and lists its thread; then a page of an
// unrelated server on another port of 127.0.0.1 (which the browser sends the cookie to) asks
// for the threads; on the REST docs page Swagger UI loads the spec and runs "Try it out"; and
// the chat page works on a plain-http name (agent.test, where browsers send no Sec-Fetch-*).
// usage: node page_cookie.mjs SERVER_BASE UNRELATED_BASE TOKEN -> prints one JSON object.
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(new URL("../../door_agui/js/package.json", import.meta.url));
const { chromium } = require("playwright-core");

const [base, unrelated, token] = process.argv.slice(2);
const port = new URL(base).port;
const lan = `http://agent.test:${port}`;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run",
    "--host-resolver-rules=MAP agent.test 127.0.0.1",
    // Chromium's own Local Network Access checks are not what is tested: the server must refuse by itself
    "--disable-features=BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights," +
      "PrivateNetworkAccessRespectPreflightResults,LocalNetworkAccessChecks"],
});
const out = { responses: [], threadRequests: [], consoleErrors: [] };

async function chatPage(context, url, text) {
  const page = await context.newPage();
  page.on("pageerror", (e) => out.consoleErrors.push(String(e)));
  page.on("response", (r) => out.responses.push({ url: r.url(), method: r.request().method(), status: r.status() }));
  page.on("request", (r) => {
    if (new URL(r.url()).pathname === "/agui/threads") out.threadRequests.push({ url: r.url(), headers: r.headers() });
  });
  const ready = () => page.waitForFunction(
    () => document.body.dataset.ready === "true" && !["running", "waiting"].includes(document.body.dataset.state),
    null, { timeout: 30000 });
  await page.goto(url);
  await ready();
  await page.fill("#input", text);
  await page.press("#input", "Enter");
  await page.waitForFunction((t) => [...document.querySelectorAll(".msg.assistant")].some((m) => m.textContent.includes(t)),
    text, { timeout: 30000 });
  await ready();
  await page.waitForFunction(() => document.querySelector("#thread-list li.current"), null, { timeout: 30000 });
  const view = await page.evaluate(() => ({
    url: location.href,
    reply: [...document.querySelectorAll(".msg.assistant")].map((m) => m.textContent).pop(),
    threads: [...document.querySelectorAll("#thread-list li .open")].map((b) => b.textContent),
  }));
  return { page, view };
}

const CDN = "https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/";
const swaggerFiles = new URL("./node_modules/swagger-ui-dist/", import.meta.url);

// Only the servers under test and the unrelated one are reached; Swagger UI's CDN is served from disk.
async function offline(route) {
  const url = route.request().url();
  if ([base, unrelated, lan].some((b) => url.startsWith(b))) return route.continue();
  if (url.startsWith(CDN)) return route.fulfill({ path: fileURLToPath(new URL(url.slice(CDN.length), swaggerFiles)) });
  return route.abort();
}

try {
  const context = await browser.newContext();
  await context.route("**/*", offline);

  // 1. the chat page on 127.0.0.1
  const { page, view } = await chatPage(context, `${base}/agui/?token=${encodeURIComponent(token)}`, "cookie check");
  out.loopback = view;
  out.cookies = await context.cookies();

  // 2. a page of an unrelated server on another port: the browser sends it the cookie
  await page.goto(`${unrelated}/agui/elsewhere`);
  out.unrelatedPage = await page.evaluate(async (target) => {
    const seen = {};
    try {
      await fetch(target + "/agui/threads", { mode: "no-cors", credentials: "include" });
      seen.noCors = "sent";
    } catch (e) {
      seen.noCors = String(e);
    }
    try {
      seen.cors = (await fetch(target + "/agui/threads", { credentials: "include" })).status;
    } catch (e) {
      seen.cors = String(e);
    }
    return seen;
  }, base);

  // 3. the REST docs page: Swagger UI (its CDN files served from tests/cross/js/node_modules) loads
  // the spec and runs "Try it out" on POST /chat, on the cookie
  await page.goto(`${base}/rest/docs?token=${encodeURIComponent(token)}`);
  const operation = page.locator(".opblock-post", { has: page.locator('[data-path="/chat"]') }).first();
  await operation.locator(".opblock-summary").click();
  await operation.locator(".try-out__btn").click();
  await operation.locator("textarea.body-param__text").fill(JSON.stringify({ message: "from the docs page" }));
  await operation.locator(".execute").click();
  const status = operation.locator(".live-responses-table tbody .response-col_status").first();
  await status.waitFor({ timeout: 30000 });
  out.docs = {
    operations: await page.locator(".opblock").count(),
    status: (await status.textContent()).trim(),
    body: await operation.locator(".live-responses-table tbody .response-col_description pre").first().textContent(),
  };
  out.cookies = await context.cookies();

  // 4. the chat page on a plain-http name (no Sec-Fetch-*: the page's GETs carry a Referer)
  const lanContext = await browser.newContext();
  await lanContext.route("**/*", offline);
  const onLan = await chatPage(lanContext, `${lan}/agui/?token=${encodeURIComponent(token)}`, "over plain http");
  out.lan = onLan.view;
  const reloaded = await onLan.page.reload();
  out.lanReload = { status: reloaded.status(), body: await reloaded.text() };
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
