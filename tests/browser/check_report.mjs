// Open DIR/report.html in headless Chromium over the DevTools protocol (a
// pipe, Node built-ins only) and check it as a reader would see it: no console
// error or CSP violation, the sections after the recommendation folded (the
// folded page under MAX_FOLDED_PX when set), then, every section unfolded,
// nothing lost: every chart an SVG with drawn content, the hostile transcript
// shown as text without running; then save a full-page screenshot.
// Usage: node check_report.mjs DIR [CHROMIUM]
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const dir = resolve(process.argv[2] || ".");
const chromium = process.argv[3] || process.env.CHROMIUM || "chromium";
const page = join(dir, "report.html");
if (!existsSync(page)) {
  console.error(`FAIL: ${page} does not exist`);
  process.exit(1);
}
const profile = mkdtempSync(join(tmpdir(), "looptune-chromium-"));
const proc = spawn(
  chromium,
  [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--remote-debugging-pipe",
    `--user-data-dir=${profile}`, "--window-size=1400,3000", "about:blank",
  ],
  { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] },
);
let stderr = "";
proc.stderr.on("data", (b) => { stderr += b; });
const out = proc.stdio[3];
const inp = proc.stdio[4];

let nextId = 1;
const pending = new Map();
const events = [];
let buf = Buffer.alloc(0);
inp.on("data", (chunk) => {
  buf = Buffer.concat([buf, chunk]);
  let i;
  while ((i = buf.indexOf(0)) >= 0) {
    const msg = JSON.parse(buf.subarray(0, i).toString("utf8"));
    buf = buf.subarray(i + 1);
    if (msg.id && pending.has(msg.id)) {
      const { res, rej } = pending.get(msg.id);
      pending.delete(msg.id);
      msg.error ? rej(new Error(JSON.stringify(msg.error))) : res(msg.result);
    } else if (msg.method) {
      events.push(msg);
      for (const w of waiters.splice(0)) w();
    }
  }
});
const waiters = [];
function send(method, params = {}, sessionId) {
  const id = nextId++;
  const m = { id, method, params };
  if (sessionId) m.sessionId = sessionId;
  out.write(JSON.stringify(m) + "\0");
  return new Promise((res, rej) => pending.set(id, { res, rej }));
}
async function waitFor(pred, ms) {
  const end = Date.now() + ms;
  while (!events.some(pred)) {
    if (Date.now() > end) throw new Error("timed out waiting for the page");
    await new Promise((r) => { waiters.push(r); setTimeout(r, 200); });
  }
}

const failures = [];
const fail = (m) => failures.push(m);
const timer = setTimeout(() => {
  console.error("FAIL: timed out after 60 s\n" + stderr.slice(-2000));
  proc.kill("SIGKILL");
  process.exit(1);
}, 60000);

try {
  const { targetId } = await send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
  const s = (m, p) => send(m, p, sessionId);
  await s("Runtime.enable");
  await s("Log.enable");
  await s("Page.enable");
  // The report must not need the network: any request other than the file itself fails the check.
  await s("Network.enable");
  await s("Emulation.setDeviceMetricsOverride", { width: 1400, height: 3000, deviceScaleFactor: 1, mobile: false });
  await s("Page.navigate", { url: pathToFileURL(page).href });
  await waitFor((e) => e.method === "Page.loadEventFired", 30000);
  await new Promise((r) => setTimeout(r, 500));

  for (const e of events) {
    const p = e.params || {};
    if (e.method === "Runtime.consoleAPICalled" && (p.type === "error" || p.type === "assert")) {
      fail(`console.${p.type}: ${(p.args || []).map((a) => a.value ?? a.description).join(" ")}`);
    } else if (e.method === "Runtime.exceptionThrown") {
      fail(`uncaught exception: ${p.exceptionDetails?.exception?.description || p.exceptionDetails?.text}`);
    } else if (e.method === "Log.entryAdded" && p.entry?.level === "error") {
      fail(`console error (${p.entry.source}): ${p.entry.text}`);
    } else if (e.method === "Network.requestWillBeSent") {
      const url = p.request?.url || "";
      if (!url.startsWith("file:") && !url.startsWith("data:")) fail(`network request: ${url}`);
    }
  }

  // Folded, as a reader first sees it: sections after the recommendation
  // are closed, and the page is short. MAX_FOLDED_PX bounds its height.
  const foldedProbe = `(() => {
    const folds = [...document.querySelectorAll("details.fold")];
    const main = document.querySelector("main");
    return JSON.stringify({
      folds: folds.length,
      open: folds.filter((d) => d.open).length,
      height: Math.round(main.getBoundingClientRect().height),
      text: document.body.innerText.length,
    });
  })()`;
  const folded = JSON.parse((await s("Runtime.evaluate", { expression: foldedProbe, returnByValue: true })).result.value);
  if (folded.folds === 0) fail("no folded section");
  if (folded.open !== 0) fail(`${folded.open} sections are open before the reader opens them`);
  const maxFolded = Number(process.env.MAX_FOLDED_PX || 0);
  if (maxFolded && folded.height > maxFolded) {
    fail(`folded page is ${folded.height} px high, over ${maxFolded} px (${(folded.height / 900).toFixed(1)} screens of 900 px)`);
  }
  // Unfolded: every section opened, everything there and drawn (checked below).
  const unfold = `(() => {
    for (const d of document.querySelectorAll("details")) d.open = true;
    const lost = [...document.querySelectorAll("nav a")]
      .map((a) => a.getAttribute("href").slice(1))
      .filter((id) => {
        const el = document.getElementById(id);
        if (!el) return true;
        const section = el.closest("details") || el.parentElement;
        return section.getBoundingClientRect().height < 40;
      });
    return JSON.stringify({ lost, text: document.body.innerText.length,
      height: Math.round(document.querySelector("main").getBoundingClientRect().height) });
  })()`;
  const unfolded = JSON.parse((await s("Runtime.evaluate", { expression: unfold, returnByValue: true })).result.value);
  await new Promise((r) => setTimeout(r, 300));
  if (unfolded.lost.length) fail(`sections missing or empty when unfolded: ${unfolded.lost.join(", ")}`);
  if (unfolded.text <= folded.text) fail("unfolding showed nothing more");
  console.log(
    `folded: ${folded.folds} sections, ${folded.height} px (${(folded.height / 900).toFixed(1)} screens of 900 px); ` +
      `unfolded: ${unfolded.height} px`,
  );

  const probe = `(() => {
    const charts = [...document.querySelectorAll("figure.chart")];
    const kinds = {};
    for (const f of charts) {
      const k = f.dataset.chart;
      const svg = f.querySelector("svg");
      const box = svg ? svg.getBoundingClientRect() : { width: 0, height: 0 };
      const drawn = svg ? svg.querySelectorAll("rect, path, polyline, circle, line, text, polygon").length : 0;
      kinds[k] = kinds[k] || { count: 0, empty: 0 };
      kinds[k].count++;
      if (!svg || drawn < 3 || box.width < 50 || box.height < 50) kinds[k].empty++;
    }
    const text = document.body.innerText;
    return JSON.stringify({
      title: document.title,
      pwned: window.__pwned === undefined ? null : String(window.__pwned),
      scripts: document.scripts.length,
      injectedImgs: document.querySelectorAll("img").length,
      kinds,
      payloadShownAsText: text.includes("<script>document.title"),
      fontsLoaded: [...document.fonts].filter((f) => f.status === "loaded").map((f) => f.family + " " + f.weight),
      sortable: document.querySelectorAll("table.sortable th button.sort").length,
    });
  })()`;
  const r = await s("Runtime.evaluate", { expression: probe, returnByValue: true, awaitPromise: true });
  const info = JSON.parse(r.result.value);
  if (info.title.includes("PWNED")) fail(`an injected script ran: document.title is ${info.title}`);
  if (info.pwned !== null) fail(`an injected script or handler ran: window.__pwned = ${info.pwned}`);
  if (info.scripts !== 1) fail(`expected the report's one script, found ${info.scripts} <script> elements`);
  if (info.injectedImgs !== 0) fail(`found ${info.injectedImgs} <img> elements (the report has none)`);
  for (const k of ["ttd", "fp-recall", "axis", "heatmap", "timeline"]) {
    const c = info.kinds[k];
    if (!c) fail(`no ${k} chart`);
    else if (c.empty) fail(`${c.empty} of ${c.count} ${k} charts are empty`);
  }
  if (!info.fontsLoaded.some((f) => f.startsWith("looptune-sans"))) fail(`embedded font not loaded: ${info.fontsLoaded}`);
  if (info.sortable === 0) fail("the configuration table is not sortable");
  const shot = await s("Page.captureScreenshot", { format: "png", captureBeyondViewport: false });
  writeFileSync(join(dir, "report.png"), Buffer.from(shot.data, "base64"));
  const full = await s("Page.getLayoutMetrics");
  // PAGES=N also saves the next N-1 screens of the page (report-2.png, ...) to look at.
  const pages = Number(process.env.PAGES || 1);
  for (let p = 2; p <= pages; p++) {
    const y = (p - 1) * 3000;
    if (y >= (full.cssContentSize?.height || 0)) break;
    const more = await s("Page.captureScreenshot", {
      format: "png", captureBeyondViewport: true, clip: { x: 0, y, width: 1400, height: 3000, scale: 1 },
    });
    writeFileSync(join(dir, `report-${p}.png`), Buffer.from(more.data, "base64"));
  }
  console.log(
    `charts: ${Object.entries(info.kinds).map(([k, v]) => `${k}=${v.count}`).join(" ")}; fonts: ${info.fontsLoaded.join(", ")}; ` +
      `hostile payload shown as text: ${info.payloadShownAsText}; page height ${Math.round(full.cssContentSize?.height || 0)} px`,
  );
  console.log(`screenshot: ${join(dir, "report.png")}`);
} catch (e) {
  fail(String(e && e.stack || e));
}
clearTimeout(timer);
proc.kill("SIGTERM");
try { rmSync(profile, { recursive: true, force: true }); } catch {}
if (failures.length) {
  for (const f of failures) console.error("FAIL: " + f);
  process.exit(1);
}
console.log("browser check passed");
process.exit(0);
