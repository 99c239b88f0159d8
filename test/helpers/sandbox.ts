/** STET_SKIP_SANDBOX=1 skips the sandbox tests on a machine without bubblewrap; CI never sets it. */
export const SKIP_SANDBOX = process.env.STET_SKIP_SANDBOX === "1";
