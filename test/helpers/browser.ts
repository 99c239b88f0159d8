import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";

/**
 * The Chromium binary the browser tests drive: $STET_CHROMIUM, else Debian's package.
 *
 * @example STET_CHROMIUM=/opt/chrome/chrome npx vitest run test/web-ui.test.ts
 */
export const CHROMIUM_PATH = process.env.STET_CHROMIUM || "/usr/bin/chromium";

/** STET_SKIP_BROWSER=1 skips the browser tests on a machine without Chromium; CI never sets it. */
export const SKIP_BROWSER = process.env.STET_SKIP_BROWSER === "1";

/**
 * Headless, sandbox-less, and quiet on the network: without the background-networking switches
 * Chromium opens connections of its own, and those get refused many at a time here.
 */
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-quic",
  "--no-first-run",
  "--disable-component-update",
  "--disable-sync",
];

/**
 * Launches a fresh headless Chromium (temporary profile); the caller closes it.
 *
 * @example const browser = await launchBrowser(); try { ... } finally { await browser.close(); }
 */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
}

/** The browser shared by openPage(), launched on first use and closed with its last page. */
let shared: Promise<Browser> | undefined;
/** Pages opened by openPage() and not yet closed. */
let openPages = 0;

/** A page opened by openPage(): close() it, then expect `errors` to be empty. */
export interface OpenedPage {
  page: Page;
  /** Console errors (`console: ...`) and uncaught page exceptions (`pageerror: ...`) so far. */
  errors: string[];
  /** Closes the page's context, and the shared browser if no other page is open. Idempotent. */
  close: () => Promise<void>;
}

/**
 * Opens `url` in a new page of a shared headless Chromium, in a browser context of its own (no
 * cookies or storage shared with other pages), recording console errors and uncaught exceptions.
 *
 * @example const { page, errors, close } = await openPage(serve.url); await close(); expect(errors).toEqual([]);
 */
export async function openPage(url: string): Promise<OpenedPage> {
  openPages++;
  const release = async (): Promise<void> => {
    if (--openPages > 0 || shared === undefined) return;
    const browser = shared;
    shared = undefined;
    await (await browser.catch(() => undefined))?.close();
  };
  let context: BrowserContext | undefined;
  try {
    shared ??= launchBrowser();
    context = await (await shared).newContext();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(`console: ${message.text()}`);
    });
    page.on("pageerror", (error) => errors.push(`pageerror: ${error.message}`));
    await page.goto(url);
    let closed = false;
    const opened = context;
    const close = async (): Promise<void> => {
      if (closed) return;
      closed = true;
      await opened.close().finally(release);
    };
    return { page, errors, close };
  } catch (error) {
    await context?.close().catch(() => undefined);
    await release();
    throw error;
  }
}
