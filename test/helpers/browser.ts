import { existsSync, mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import { chromium, type Browser, type Page } from 'playwright-core';

/**
 * Headless Debian chromium driven by playwright-core (which downloads no browser of
 * its own). `.ci/run` installs it with apt-get; outside CI a machine without it skips
 * the browser tests loudly, under CI=true that is a failure.
 */
export const CHROMIUM_PATH = process.env.BATON_CHROMIUM ?? '/usr/bin/chromium';

/** Screenshots of the dashboard's pages land here (gitignored). */
export const SCREENSHOT_DIR = join(process.cwd(), 'test-artifacts', 'screenshots');

/** True when chromium is installed; else warns (outside CI) or throws (CI=true). */
export function chromiumAvailable(): boolean {
  if (existsSync(CHROMIUM_PATH)) return true;
  const message = `${CHROMIUM_PATH} is missing: install it with \`apt-get install -y chromium\` (or set BATON_CHROMIUM)`;
  if (process.env.CI === 'true') throw new Error(`${message}: the browser tests cannot run under CI`);
  console.warn(`\n!!!!!!!!\n!! ${message}: SKIPPING the dashboard browser tests.\n!!!!!!!!\n`);
  return false;
}

/** Launches headless chromium; the caller closes it. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

/** Serves a web-standard `fetch` handler on 127.0.0.1 at a free port. */
export async function listen(fetch: (request: Request) => Response | Promise<Response>): Promise<{ url: string; close(): Promise<void> }> {
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        // SSE streams stay open: drop every connection, then stop listening.
        if ('closeAllConnections' in server) server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Saves a full-page screenshot as `<SCREENSHOT_DIR>/<name>.png`; returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/**
 * Collects what a page reports that a test should fail on: uncaught exceptions and
 * console errors (`errors`), and each dialog (auto-dismissed).
 */
export function watchPage(page: Page): { errors: string[] } {
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`);
  });
  page.on('dialog', (dialog) => {
    errors.push(`dialog: ${dialog.message()}`);
    void dialog.dismiss();
  });
  return { errors };
}

/** What the page functions below touch of the browser's globals (the tests compile without the DOM lib). */
interface PageGlobals {
  document: {
    querySelector(selector: string): { value?: number; textContent: string | null } | null;
    scripts: ArrayLike<{ textContent: string | null }>;
  };
}

/** The `value` of the `<progress>` at `selector`, or -1 while there is none. */
export function progressValue(page: Page, selector: string): Promise<number> {
  return page.evaluate((sel) => (globalThis as unknown as PageGlobals).document.querySelector(sel)?.value ?? -1, selector);
}

/** Waits until the `<progress>` at `selector` shows a value above `seen` (it moves by live updates only). */
export async function waitForProgressAbove(page: Page, selector: string, seen: number): Promise<number> {
  await page.waitForFunction(
    ({ sel, above }) => ((globalThis as unknown as PageGlobals).document.querySelector(sel)?.value ?? -1) > above,
    { sel: selector, above: seen },
  );
  return progressValue(page, selector);
}

/** Waits until the text of the element at `selector` contains `text`. */
export async function waitForText(page: Page, selector: string, text: string): Promise<void> {
  await page.waitForFunction(
    ({ sel, want }) => (globalThis as unknown as PageGlobals).document.querySelector(sel)?.textContent?.includes(want) === true,
    { sel: selector, want: text },
  );
}

/** Scripts in the document whose text contains `needle` (an injected script would be one). */
export function scriptsContaining(page: Page, needle: string): Promise<number> {
  return page.evaluate((n) => Array.from((globalThis as unknown as PageGlobals).document.scripts).filter((s) => s.textContent?.includes(n)).length, needle);
}

/** A global of the page, e.g. one a payload's script would set. */
export function pageGlobal(page: Page, name: string): Promise<unknown> {
  return page.evaluate((key) => (globalThis as unknown as Record<string, unknown>)[key], name);
}

/** Waits until exactly `count` elements match `selector`. */
export async function waitForCount(page: Page, selector: string, count: number): Promise<void> {
  await page.waitForFunction(
    ({ sel, want }) => (globalThis as unknown as { document: { querySelectorAll(s: string): { length: number } } }).document.querySelectorAll(sel).length === want,
    { sel: selector, want: count },
  );
}
