import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ReviewsView } from "../src/api/contract.js";
import { openPage, SKIP_BROWSER } from "./helpers/browser.js";
import { runCli } from "./helpers/cli.js";
import { evalProject } from "./helpers/eval-project.js";
import { startServe } from "./helpers/serve.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** 30 samples; every fifth answer is wrong: s00, s05, s10, s15, s20 and s25 fail `exact`. */
const EVAL = `import { defineEval } from "stet";
export default defineEval({
  name: "reviewed",
  dataset: Array.from({ length: 30 }, (_, i) => ({ id: "s" + String(i).padStart(2, "0"), input: "what is " + i, target: "t" + i })),
  solver: async (sample) => (Number(sample.id.slice(1)) % 5 === 0 ? "wrong" : sample.target),
  scorers: [function exact({ sample, output }) { return output === sample.target; }],
});
`;

describe.skipIf(SKIP_BROWSER)("web UI: the review queue (real server, real Chromium)", () => {
  it("reviews five failed samples with the keyboard only; after a reload they are there", async () => {
    const p = evalProject({ "evals/reviewed.mjs": EVAL });
    cleanups.push(p.cleanup);
    const run = await runCli(["run", "evals/reviewed.mjs", "--json"], { cwd: p.dir });
    expect(run.code, run.stderr).toBe(0);
    const runId = (JSON.parse(run.stdout.slice(run.stdout.indexOf("{\n"))) as { runId: string })
      .runId;
    const server = await startServe(["--store", p.db, "--evals", join(p.dir, "evals")], {
      STET_REVIEWER: "ada",
    });
    cleanups.push(() => server.proc.child.kill("SIGKILL"));
    const { page, errors, close } = await openPage(`${server.url}/#/runs/${runId}/review/failed`);
    cleanups.push(close);

    const at = async (sampleId: string) =>
      page.locator(`h2[data-sample="${sampleId}"]`).waitFor({ timeout: 20_000 });
    const saved = async (sampleId: string) =>
      page.getByText(`Saved ${sampleId} epoch 1.`).waitFor({ timeout: 20_000 });

    await at("s00");
    // What the reviewer judges: input, target, output and the judge's verdict.
    expect(await page.locator("pre.input").textContent()).toBe("what is 0");
    expect(await page.locator("pre.target").textContent()).toBe("t0");
    expect(await page.locator("pre.output").textContent()).toBe("wrong");
    expect(await page.locator("ul.scores").textContent()).toContain("exact: 0");
    await page.keyboard.press("p");
    await saved("s00");
    await at("s05");
    await page.keyboard.press("f");
    await saved("s05");
    await at("s10");
    await page.keyboard.press("n");
    await page.keyboard.type("the target is wrong too");
    await page.keyboard.press("Escape");
    await page.keyboard.press("f");
    await saved("s10");
    await at("s15");
    await page.keyboard.press("j");
    await at("s20");
    await page.keyboard.press("3");
    await saved("s20");
    await at("s25");
    await page.keyboard.press("p");
    await saved("s25");
    await page.keyboard.press("ArrowLeft");
    await at("s20");
    expect(await page.locator("ul.reviews").textContent()).toContain("human by ada: 3");

    await page.reload();
    await at("s00");
    expect(await page.locator("ul.reviews").textContent()).toBe("human by ada: pass");
    await page.keyboard.press("ArrowRight");
    await at("s05");
    await page.keyboard.press("ArrowRight");
    await at("s10");
    expect(await page.locator("ul.reviews").textContent()).toBe(
      "human by ada: fail — the target is wrong too",
    );

    const stored = (await (await server.fetch(`/api/runs/${runId}/reviews`)).json()) as ReviewsView;
    expect(stored.reviews.map((r) => [r.sampleId, r.value, r.reviewer, r.note])).toEqual([
      ["s00", 1, "ada", null],
      ["s05", 0, "ada", null],
      ["s10", 0, "ada", "the target is wrong too"],
      ["s20", 3, "ada", null],
      ["s25", 1, "ada", null],
    ]);
    expect(errors).toEqual([]);
  });
});
