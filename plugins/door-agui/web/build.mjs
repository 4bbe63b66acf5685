// Bundle the chat page: src/main.js + @ag-ui/client (from the locked node_modules)
// -> ../onedoor_door_agui/static/chat.js. `node build.mjs --out DIR` writes elsewhere
// (the stale-bundle test builds into a temporary folder and compares).
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const at = process.argv.indexOf("--out");
const outdir = at > 0 ? path.resolve(process.argv[at + 1]) : path.join(here, "..", "onedoor_door_agui", "static");

await build({
  entryPoints: [path.join(here, "src", "main.js")],
  outfile: path.join(outdir, "chat.js"),
  bundle: true,
  minify: true,
  format: "iife",
  platform: "browser",
  target: ["es2020"],
  legalComments: "none",
  charset: "utf8",
  absWorkingDir: here,
  logLevel: "warning",
});
console.log(`built ${path.join(outdir, "chat.js")}`);
