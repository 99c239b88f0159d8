import type { Attempt, AttemptError } from "../core/types.js";

/** How many different samples must fail alike at the start of an invocation to stop it. */
export const MISCONFIGURED_AFTER_SAMPLES = 3;

/** Why the rule stopped an invocation: the error its first samples all failed with. */
export interface Misconfiguration {
  error: AttemptError & { configuration: NonNullable<AttemptError["configuration"]> };
  /** How many different samples failed with it. */
  samples: number;
}

/**
 * The early-stop rule for an endpoint that cannot serve any request (a refused connection, an
 * unknown host, a 401/403/404 to everything): such a run is a configuration error, not thousands
 * of sample errors. It watches the attempts an invocation commits, in commit order, and fires
 * once `samples` different samples have failed with the same configuration-class provider error
 * (same ConfigurationFault and same message) before any attempt failed otherwise or succeeded.
 * The first attempt that does not fit (a scored one, an error of another kind, another fault)
 * disarms it for the rest of the invocation: it only looks at the start, so a run in which some
 * samples fail (a 404 for one sample's content) goes on as before. A key's retries with the same
 * error neither disarm it nor count as another sample. Attempts of earlier invocations are not
 * looked at: a resume is judged on its own first attempts.
 *
 * @example
 * const watch = watchMisconfiguration();
 * const verdict = watch.observe(attempt); // a Misconfiguration once the rule fires, else undefined
 */
export function watchMisconfiguration(samples = MISCONFIGURED_AFTER_SAMPLES): {
  observe(attempt: Pick<Attempt, "sampleId" | "status" | "error">): Misconfiguration | undefined;
} {
  let armed = true;
  let first: Misconfiguration["error"] | undefined;
  const failed = new Set<string>();
  return {
    observe(attempt) {
      if (!armed) return undefined;
      const error = attempt.error;
      if (attempt.status !== "error" || !isConfigurationError(error)) {
        armed = false;
        return undefined;
      }
      if (first === undefined) first = error;
      else if (!sameCause(first, error)) {
        armed = false;
        return undefined;
      }
      failed.add(attempt.sampleId);
      if (failed.size < samples) return undefined;
      armed = false;
      return { error: first, samples: failed.size };
    },
  };
}

function isConfigurationError(error: AttemptError | null): error is Misconfiguration["error"] {
  return error?.type === "provider" && error.configuration !== undefined;
}

function sameCause(a: Misconfiguration["error"], b: Misconfiguration["error"]): boolean {
  return (
    a.message === b.message &&
    a.status === b.status &&
    a.configuration.cause === b.configuration.cause &&
    a.configuration.url === b.configuration.url &&
    a.configuration.status === b.configuration.status
  );
}
