/** What a run's buttons do: Resume, Rescore and Cancel, each saying in the notice how it went. */
import { postJson, sse } from "./api.js";
import { fill, h } from "./dom.js";
import { message } from "./shared.js";
import type { EventMessage, ExecutionEvents } from "../api/contract.js";

/** The run view's parts an action reads and redraws. */
export type RunActionsContext = {
  runId: string;
  /** Aborted when the view is left: every request of an action ends with it. */
  signal: AbortSignal;
  notice: HTMLElement;
  /** Reads the run again and redraws it with its samples. */
  refresh: () => Promise<void>;
  /** Follows a live run's progress until it ends. */
  follow: () => Promise<void>;
};

/**
 * The run view's actions: a resume follows the run it restarted, a rescore its own stream, a
 * cancel asks and says so. A failure shows in the notice.
 *
 * @example
 * const actions = runActions({ runId, signal, notice, refresh, follow });
 * button.onclick = () => void actions.cancel();
 */
export function runActions({ runId, signal, notice, refresh, follow }: RunActionsContext) {
  /**
   * POSTs a run action whose answer is an event stream and hands each event to `onEvent` until it
   * returns true or the stream ends; the stream is closed either way (the server's work goes on
   * without it). False when it failed: the notice says why.
   */
  const postStream = async (
    action: "resume" | "rescore",
    onEvent: (e: EventMessage<ExecutionEvents>) => boolean | void,
  ): Promise<boolean> => {
    const stream = new AbortController();
    signal.addEventListener("abort", () => stream.abort(), { once: true });
    try {
      for await (const e of sse<ExecutionEvents>(
        `/api/runs/${encodeURIComponent(runId)}/${action}`,
        { method: "POST" },
        stream.signal,
      )) {
        if (onEvent(e)) break;
      }
      return true;
    } catch (error) {
      fill(notice, h("span", { class: "error" }, message(error)));
      return false;
    } finally {
      stream.abort();
    }
  };

  const resume = async () => {
    fill(notice, "Resuming…");
    const started = await postStream("resume", (e) => {
      if (e.event !== "started") return false;
      const d = e.data;
      fill(notice, `Resumed: ${d.preserved} preserved, ${d.remaining} to execute.`);
      // The run goes on without this request; its progress is followed from the store.
      return true;
    });
    if (!started) return;
    await refresh();
    await follow();
  };

  /** Scores the stored outputs again: follows the rescore's own stream to its end. */
  const rescore = async () => {
    fill(notice, "Rescoring…");
    const done = await postStream("rescore", (e) => {
      if (e.event === "progress") {
        const d = e.data;
        fill(notice, `Rescoring: ${d.done + d.errored}/${d.total} outputs scored.`);
      } else if (e.event === "completed") {
        const d = e.data;
        fill(notice, `Rescored ${d.rescored} stored outputs; no model was called for them.`);
      } else if (e.event === "error") {
        fill(notice, h("span", { class: "error" }, String(e.data.message)));
      }
    });
    if (done) await refresh();
  };

  const cancel = async () => {
    try {
      await postJson(`/api/runs/${encodeURIComponent(runId)}/cancel`);
      fill(notice, "Cancelling: in-flight samples finish, then the run can be resumed.");
    } catch (error) {
      fill(notice, h("span", { class: "error" }, message(error)));
    }
  };

  return { resume, rescore, cancel };
}
