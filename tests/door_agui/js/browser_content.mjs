// The chat page's attachments and shared state in headless Chromium (Debian's chromium, driven
// by playwright-core): attach a PNG with the attach button, paste another into the composer,
// see both in the conversation and after a reload; a tool's image and a reply's image; the
// state panel showing the agent's state, an edit the agent sees on its next message, and the
// state after a reload.
// usage: node browser_content.mjs PAGE_URL SCREENSHOT_PATH PNG_BASE64 -> prints one JSON object.
import { chromium } from "playwright-core";

const [pageUrl, screenshot, pngBase64] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run"],
});
const out = { consoleErrors: [], posted: [] };
try {
  const page = await browser.newPage({ viewport: { width: 1100, height: 1000 } });
  page.on("pageerror", (e) => out.consoleErrors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && out.consoleErrors.push(m.text()));
  page.on("request", (r) => {
    if (r.method() === "POST" && r.url().endsWith("/agui/")) out.posted.push(JSON.parse(r.postData() ?? "null"));
  });
  const ready = () =>
    page.waitForFunction(
      () => document.body.dataset.ready === "true" && !["running", "waiting"].includes(document.body.dataset.state),
      null,
      { timeout: 30000 },
    );
  const replies = () => page.evaluate(() => [...document.querySelectorAll(".msg.assistant")].map((m) => m.textContent));
  const send = async (text, starts) => {
    const before = (await replies()).length;
    await page.fill("#input", text);
    await page.press("#input", "Enter");
    await page.waitForFunction(
      ([n, s]) => {
        const all = [...document.querySelectorAll(".msg.assistant")];
        return all.length > n && all.at(-1).textContent.startsWith(s) && !all.at(-1).classList.contains("streaming");
      },
      [before, starts],
      { timeout: 30000 },
    );
    await ready();
    return (await replies()).at(-1);
  };
  // every user message: its text and its images (decoded by the browser: naturalWidth > 0)
  const users = () =>
    page.evaluate(() =>
      [...document.querySelectorAll(".msg.user")].map((m) => ({
        text: m.firstChild?.nodeType === Node.TEXT_NODE ? m.firstChild.textContent : "",
        images: [...m.querySelectorAll("img.part-image")].map((i) => ({ alt: i.alt, width: i.naturalWidth, src: i.src.slice(0, 22) })),
      })),
    );
  const state = () =>
    page.evaluate(() => ({ editor: document.querySelector("#state-editor").value, version: document.querySelector("#state-version").textContent }));
  const png = Buffer.from(pngBase64, "base64");

  await page.goto(pageUrl);
  await ready();
  out.attachVisible = await page.isVisible("#attach");
  out.accept = await page.getAttribute("#attach-input", "accept");

  // 1. the attach button: a PNG file, then the message
  await page.setInputFiles("#attach-input", { name: "dot-test.png", mimeType: "image/png", buffer: png });
  await page.waitForSelector("#pending .part-image", { timeout: 10000 });
  out.pendingBefore = await page.evaluate(() => document.querySelectorAll("#pending .pending-item").length);
  out.attachedReply = await send("what is in this picture", "Received:");
  out.pendingAfter = await page.evaluate(() => document.querySelectorAll("#pending .pending-item").length);

  // 2. paste an image into the composer (a clipboard with a file), and send it alone
  await page.evaluate((b64) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const data = new DataTransfer();
    data.items.add(new File([bytes], "pasted.png", { type: "image/png" }));
    document.querySelector("#input").dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
  }, pngBase64);
  await page.waitForSelector("#pending .part-image", { timeout: 10000 });
  await page.click("#send");
  await page.waitForFunction(() => document.querySelectorAll(".msg.assistant").length >= 2 && document.body.dataset.state !== "running",
    null, { timeout: 30000 });
  await ready();
  out.pastedReply = (await replies()).at(-1);
  await page.waitForFunction(() => [...document.querySelectorAll("img.part-image")].every((i) => i.complete), null, { timeout: 10000 });
  out.usersLive = await users();

  // 3. a tool's image and a reply's image
  out.drawReply = await send("/draw /image a dot", "[image dot.png");
  out.toolImages = await page.evaluate(() => document.querySelectorAll(".tool .parts img.part-image").length);
  out.replyImages = await page.evaluate(() => document.querySelectorAll(".reply-part img.part-image").length);

  // 4. the shared state: the agent sets it, the user edits it, the agent sees the edit
  out.stateReply = await send('/state {"todo": ["milk"]} remember this', "You said: remember this");
  out.stateShown = await state();
  await page.click("#state-panel summary");
  await page.fill("#state-editor", JSON.stringify({ todo: ["milk", "eggs"], note: "from the page" }));
  await page.click("#state-save");
  out.saveNote = await page.textContent("#state-note");
  out.editedReply = await send("what is on the list", "You said: what is on the list");
  out.stateAfterEdit = await state();

  // 5. a reload: the images and the state come back from the server
  await page.reload();
  await ready();
  await page.waitForFunction(() => [...document.querySelectorAll("img.part-image")].every((i) => i.complete), null, { timeout: 10000 });
  out.usersReloaded = await users();
  out.toolImagesReloaded = await page.evaluate(() => document.querySelectorAll(".tool .parts img.part-image").length);
  out.stateReloaded = await state();
  out.afterReloadReply = await send("still there?", "You said: still there?");
  await page.screenshot({ path: screenshot, fullPage: true });
} catch (error) {
  console.error(JSON.stringify(out).slice(0, 4000)); // what was seen before the failure
  throw error;
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
