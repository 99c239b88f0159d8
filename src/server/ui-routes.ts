import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Hono } from "hono";
import { ApiError } from "./api-error.js";

/**
 * The web UI's page: a shell whose script (src/ui/, bundled by the build into dist/ui/app.js)
 * draws everything from the API. Neither carries data, so neither needs the API's token. Nothing
 * is inline (the stylesheet is /ui/app.css), so the Content-Security-Policy needs no exceptions.
 */
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>stet</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/ui/app.css">
</head>
<body>
<header><a href="#/">stet</a></header>
<main id="main"><noscript>The stet UI needs JavaScript.</noscript></main>
<script type="module" src="/ui/app.js"></script>
</body>
</html>
`;

/** The UI's stylesheet, GET /ui/app.css. */
const STYLE = `:root { font: 14px/1.45 system-ui, sans-serif; color: #1d2430; background: #f7f8fa; }
body { margin: 0; }
header { background: #1d2430; color: #fff; padding: 10px 24px; }
header a { color: #fff; text-decoration: none; font-weight: 600; }
main { padding: 16px 24px 48px; max-width: 1200px; }
h1 { font-size: 22px; margin: 8px 0 12px; } h2 { font-size: 17px; margin: 24px 0 8px; }
h3 { font-size: 15px; margin: 0 0 6px; } h4 { margin: 10px 0 4px; }
a { color: #1f5fbf; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #e3e6eb; vertical-align: top; }
th { font-weight: 600; background: #eef1f5; }
td.output { max-width: 420px; overflow-wrap: anywhere; color: #3a4656; }
pre { background: #fff; border: 1px solid #e3e6eb; padding: 8px; white-space: pre-wrap; overflow-wrap: anywhere; margin: 4px 0; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; background: #e3e6eb; }
.badge.completed, .badge.scored { background: #d8f0dd; color: #1d6b2f; }
.badge.running { background: #dbe8fb; color: #1f4f9a; }
.badge.interrupted, .badge.pending { background: #fbefd5; color: #7a5300; }
.badge.errored, .badge.error { background: #f8dcdc; color: #9a1f1f; }
.tag { margin-left: 6px; font-size: 12px; color: #5a6677; border: 1px solid #cfd5dd; border-radius: 4px; padding: 0 4px; }
.bar { display: inline-flex; width: 160px; height: 8px; background: #e3e6eb; border-radius: 4px; overflow: hidden; margin-right: 8px; vertical-align: middle; }
.bar .done { background: #3a9a52; } .bar .errored { background: #d14b4b; }
.progress { margin: 10px 0; } .meta, .muted { color: #5a6677; } .err, .error { color: #9a1f1f; }
.actions { display: flex; gap: 10px; align-items: center; margin: 10px 0; }
button { font: inherit; padding: 5px 12px; border: 1px solid #9aa5b4; border-radius: 4px; background: #fff; cursor: pointer; }
button.resume { background: #1f5fbf; border-color: #1f5fbf; color: #fff; }
button:disabled { opacity: .5; cursor: default; }
.filters, form.start { display: flex; gap: 8px; margin: 8px 0; align-items: center; }
input, select { font: inherit; padding: 4px 6px; }
.metrics { max-width: 520px; }
article.attempt { background: #fff; border: 1px solid #e3e6eb; border-left: 4px solid #3a9a52; padding: 10px 12px; margin: 10px 0; }
article.attempt.error { border-left-color: #d14b4b; }
.explanation { color: #5a6677; }
.notice:empty { display: none; }
`;

/** dist/ui/ of the installed package (the build writes the UI's script there). */
function uiDir(): string {
  const packageJson = createRequire(import.meta.url).resolve("stet/package.json");
  return join(dirname(packageJson), "dist", "ui");
}

/**
 * GET / (the UI's page), GET /ui/app.css (its stylesheet) and GET /ui/app.js (its script, with
 * the source map beside it).
 *
 * @example app.route("/", uiRoutes());
 */
export function uiRoutes(): Hono {
  const app = new Hono();
  app.get("/", (c) => c.html(PAGE));
  app.get("/ui/app.css", (c) =>
    c.body(STYLE, 200, { "content-type": "text/css; charset=utf-8", "cache-control": "no-cache" }),
  );
  app.get("/ui/:file{app\\.js(\\.map)?}", async (c) => {
    const file = c.req.param("file");
    const text = await readFile(join(uiDir(), file), "utf8").catch(() => {
      throw new ApiError(404, "not_found", `the UI is not built (${file}); run npm run build`);
    });
    const type = file.endsWith(".map") ? "application/json" : "text/javascript; charset=utf-8";
    return c.body(text, 200, { "content-type": type, "cache-control": "no-cache" });
  });
  return app;
}
