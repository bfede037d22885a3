/**
 * The dashboard in a real browser (headless Debian chromium via playwright-core),
 * over the real HTTP app on a port, a temp database and a worker in this process
 * running real jobs. Waits are on the page's DOM (waitForFunction / locators) and on
 * worker events, never on sleeps.
 *
 * Runs in the sqlite vitest project only: the dashboard talks to the HTTP API, which
 * is driver-independent (the API tests cover both drivers), and a browser is slow.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { readFileSync } from 'node:fs';
import { defineQueue, defineService, defineTask, PREVIEW_CHARS, type AnyTask, type Baton } from 'baton-jobs';
import { createHttpApp } from 'baton-jobs/http';
import { chromiumAvailable, launchChromium, listen, pageGlobal, progressValue, screenshot, scriptsContaining, waitForCount, waitForProgressAbove, waitForText, watchPage } from '../helpers/browser.js';
import { openBaton, testDriver } from '../helpers/db.js';
import { collectEvents, waitForEvent } from '../helpers/events.js';
import { openKitBaton } from '../helpers/kit-baton.js';
import { orderTask } from '../helpers/steps.js';

const enabled = testDriver === 'sqlite' && chromiumAvailable();

const XSS = '<script>window.__pwned=1</script><img src=x onerror=window.__pwned=2>';

let browser: Browser;
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

beforeAll(async () => {
  if (enabled) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

/**
 * A Baton with the kit, a started worker on `queues`, the HTTP app on a port and a
 * fresh browser page. `flaky` fails until `flaky.allow` is set.
 */
async function setup(
  options: { queues?: string[]; extraTasks?: AnyTask[]; services?: Parameters<Baton['worker']>[0]['services']; readToken?: string; adminToken?: string } = {},
) {
  const { baton, kit, db } = await openKitBaton();
  const flakyState = { allow: false };
  const flaky = defineTask('flaky', {
    maxAttempts: 1,
    handler: async (payload: { label?: string }) => {
      if (!flakyState.allow) throw new Error(`flaky is not allowed yet (${payload.label ?? 'no label'})`);
      return { ok: true, label: payload.label ?? null };
    },
  });
  const tasks = [...kit.tasks, flaky, ...(options.extraTasks ?? [])];
  const worker = baton.worker({ tasks, queues: options.queues ?? ['default'], concurrency: 8, services: options.services ?? [] });
  // Services run as soon as the worker starts: listen first.
  const firstServiceRun = options.services?.length ? waitForEvent(worker, 'service:completed', (e) => e.service === 'cache-cleanup') : undefined;
  await worker.start();
  const app = createHttpApp(baton, { tasks, eventsInterval: 100, readToken: options.readToken, adminToken: options.adminToken });
  const server = await listen(app.fetch);
  stops.push(() => server.close());
  const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
  stops.push(() => context.close());
  const page = await context.newPage();
  const watched = watchPage(page);
  return { baton, db, kit, worker, flaky, flakyState, firstServiceRun, url: server.url, page, pageErrors: watched.errors };
}

/** Steps of a job that must still be running when the test looks (hours; the test cancels it): however slow the machine, it never finishes first. */
const LONG = 100_000;

/** Opens `hash` and waits until the view rendered data at least once. */
async function open(page: Page, url: string, hash: string): Promise<void> {
  await page.goto(`${url}/${hash}`);
  await page.waitForSelector('main#view[data-ready]');
}


describe.skipIf(!enabled)('dashboard in a browser', () => {
  it('shows a running job’s progress advancing live, and cancels it from the page', async () => {
    const { baton, kit, worker, url, page, pageErrors } = await setup();
    const claimed = waitForEvent(worker, 'job:claimed');
    const job = await baton.enqueue(kit.steps, { steps: LONG, stepMs: 50 });
    await claimed;
    await waitForEvent(worker, 'job:progress', (e) => e.job.id === job.id);

    const requests: string[] = [];
    page.on('request', (request) => requests.push(new URL(request.url()).pathname + new URL(request.url()).search));
    await open(page, url, `#/jobs/${job.id}`);
    // Progress arrives through the job's own stream (/api/events?job=ID), without a reload or a re-fetch.
    const first = await waitForProgressAbove(page, '#job-progress', 0);
    expect(await waitForProgressAbove(page, '#job-progress', first)).toBeGreaterThan(first);
    await expect.poll(() => page.locator('#job-state').getAttribute('data-state')).toBe('running');
    expect(await page.locator('#job-lease').textContent()).toBe(worker.id);
    expect(requests.filter((path) => path === `/api/events?job=${job.id}`)).toHaveLength(1);
    expect(requests.filter((path) => path === `/api/jobs/${job.id}`)).toHaveLength(1); // fetched once; the stream did the rest

    const cancelled = waitForEvent(worker, 'job:cancelled', (e) => e.job.id === job.id);
    await page.click('button[data-action="cancel"]');
    await cancelled;
    await page.waitForSelector('#job-state[data-state="cancelled"]');
    await page.waitForSelector('button[data-action="retry"]');
    expect(await page.locator('button[data-action="cancel"]').count()).toBe(0);
    expect((await baton.getJob(job.id)).state).toBe('cancelled');
    // The stored timeline: the start on this worker, then the request the page made (through the API: "http").
    await page.waitForSelector('#job-timeline li[data-type="cancelled"]');
    expect(await page.locator('#job-timeline li').evaluateAll((items) => items.map((li) => li.getAttribute('data-type')))).toEqual(['enqueued', 'started', 'cancelRequested', 'cancelled']);
    expect(await page.locator('#job-timeline li[data-type="started"]').textContent()).toContain(`attempt 1 started on ${worker.id}`);
    expect(await page.locator('#job-timeline li[data-type="cancelRequested"]').textContent()).toContain('cancel requested by http');

    // The jobs list shows it cancelled too, and a new running job's bar moves there.
    const claimedNext = waitForEvent(worker, 'job:claimed');
    const next = await baton.enqueue(kit.steps, { steps: LONG, stepMs: 50 });
    await claimedNext;
    await open(page, url, '#/jobs');
    await page.waitForSelector(`tr[data-job-id="${job.id}"][data-state="cancelled"]`);
    const rowBar = `tr[data-job-id="${next.id}"] progress`;
    await page.waitForSelector(rowBar);
    const rowFirst = await progressValue(page, rowBar);
    expect(await waitForProgressAbove(page, rowBar, rowFirst)).toBeGreaterThan(rowFirst);
    await baton.cancel(next.id);
    expect(pageErrors).toEqual([]);
  });

  it('retries a failed job from the page and shows it completed', async () => {
    const { baton, worker, flaky, flakyState, url, page, pageErrors } = await setup();
    const failed = waitForEvent(worker, 'job:failed');
    const job = await baton.enqueue(flaky, { label: 'first' });
    await failed;

    await open(page, url, `#/jobs/${job.id}`);
    await page.waitForSelector('#job-state[data-state="failed"]');
    const error = page.locator('#job-errors .attempt-error[data-attempt="1"]');
    expect(await error.locator('.msg').textContent()).toBe('flaky is not allowed yet (first)');
    expect(await error.locator('pre').textContent()).toContain('Error: flaky is not allowed yet');

    flakyState.allow = true;
    const completed = waitForEvent(worker, 'job:completed', (e) => e.job.id === job.id);
    await page.click('button[data-action="retry"]');
    await completed;
    await page.waitForSelector('#job-state[data-state="completed"]');
    expect(JSON.parse((await page.locator('#job-result').textContent())!)).toEqual({ ok: true, label: 'first' });
    // The failed attempt stays in the history.
    expect(await page.locator('#job-errors .attempt-error').count()).toBe(1);
    expect(pageErrors).toEqual([]);
  });

  it('"Retry from scratch" clears the checkpoint the failed run saved; "Run now" promotes a delayed job, which then runs', async () => {
    let failFirst = true;
    const resumable = defineTask('resumable', {
      maxAttempts: 1,
      handler: async (_payload: null, ctx) => {
        const from = ctx.checkpoint;
        await ctx.saveCheckpoint({ step: 41 });
        if (failFirst) throw new Error('stopped at step 41');
        return { from };
      },
    });
    const { baton, worker, flaky, flakyState, url, page, pageErrors } = await setup({ extraTasks: [resumable] });
    const failed = waitForEvent(worker, 'job:failed');
    const job = await baton.enqueue(resumable, null);
    await failed;
    await open(page, url, `#/jobs/${job.id}`);
    await page.waitForSelector('#job-state[data-state="failed"]');
    expect(await page.locator('button[data-action="retry"]').count()).toBe(1);
    failFirst = false;
    const completed = waitForEvent(worker, 'job:completed', (e) => e.job.id === job.id);
    await page.click('button[data-action="retry-fresh"]');
    expect((await completed).result).toEqual({ from: null }); // not { step: 41 }: from scratch
    await page.waitForSelector('#job-state[data-state="completed"]');
    await waitForText(page, '#job-timeline [data-type="retried"]', 'retried by hand from scratch');

    flakyState.allow = true;
    const delayed = await baton.enqueue(flaky, { label: 'later' }, { delay: 3_600_000 });
    await open(page, url, `#/jobs/${delayed.id}`);
    await page.waitForSelector('#job-state[data-state="queued"]');
    const ran = waitForEvent(worker, 'job:completed', (e) => e.job.id === delayed.id);
    await page.click('button[data-action="promote"]');
    await ran;
    await page.waitForSelector('#job-state[data-state="completed"]');
    await waitForText(page, '#job-timeline [data-type="promoted"]', 'promoted: due at once');
    expect(await page.locator('button[data-action="promote"]').count()).toBe(0);
    expect(pageErrors).toEqual([]);
  });

  it('a waiting job: its badge, a "Waits for" row, the Steps panel (name, state, attempt, duration, result size, error, deadline), no "Run now"; then the message completes it live', async () => {
    const { baton, worker, url, page, pageErrors } = await setup({ extraTasks: [orderTask] });
    const waiting = waitForEvent(worker, 'job:waiting', (e) => e.job.task === 'order');
    const job = await baton.enqueue(orderTask, null);
    await waiting;
    const { until } = (await baton.getJob(job.id)).wait!;
    await open(page, url, `#/jobs/${job.id}`);
    await page.waitForSelector('#job-state .badge.waiting');
    expect(await page.locator('#job-state').textContent()).toBe('waiting');
    expect(await page.locator('#job-wait').getAttribute('data-kind')).toBe('message');
    expect(await page.locator('#job-wait').textContent()).toContain('message on "shipped" until');
    expect(await page.locator('#job-wait [title]').getAttribute('title')).toBe(until.toISOString());
    expect(await page.locator('button[data-action="promote"]').count()).toBe(0);
    expect(await page.locator('button[data-action="cancel"]').count()).toBe(1);
    const rows = page.locator('#job-steps tbody tr');
    expect(await rows.evaluateAll((trs) => trs.map((tr) => [tr.getAttribute('data-step'), tr.getAttribute('data-state')]))).toEqual([
      ['charge', 'completed'],
      ['flaky', 'failed'],
      ['baton:receive:shipped', 'waiting'],
    ]);
    const cells = (name: string) => page.locator(`#job-steps tr[data-step="${name}"] td`).allTextContents();
    const charge = await cells('charge');
    expect([charge[0], charge[1], charge[2], charge[3], charge[6]]).toEqual(['1', 'charge', 'completed', '1', '14 B']);
    expect(charge[5]).toMatch(/\d/);
    const flaky = await cells('flaky');
    expect([flaky[2], flaky[3], flaky[6], flaky[7]]).toEqual(['failed', '1 (2 tries)', '—', 'carrier down']);
    const receive = await cells('baton:receive:shipped');
    expect([receive[2], receive[5], receive[6]]).toEqual(['waiting', '—', '—']);
    expect(receive[7]).toMatch(/^until /);
    await screenshot(page, 'job-steps-waiting');

    const done = waitForEvent(worker, 'job:completed', (e) => e.job.id === job.id);
    await baton.send(job.id, 'shipped', { tracking: 'ZX9' });
    await done;
    await page.waitForSelector('#job-state[data-state="completed"]');
    await page.waitForSelector('#job-steps tr[data-step="baton:receive:shipped"][data-state="completed"]');
    expect(await page.locator('#job-wait').count()).toBe(0);
    expect((await cells('baton:receive:shipped'))[6]).toBe('18 B');
    expect(pageErrors).toEqual([]);
  });

  it('a parent waiting for its children: "Waits for" links each child, its steps link them, and a child links back to its parent', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const part = defineTask('part', { handler: async (n: number) => (await gate, n) });
    const assembly = defineTask('assembly', {
      handler: async (_: null, ctx) => {
        await Promise.all([1, 2].map((n) => ctx.enqueueChild(part, n)));
        return (await ctx.waitForChildren()).map((c) => c.result);
      },
    });
    const { baton, worker, url, page, pageErrors } = await setup({ extraTasks: [assembly, part] });
    const waiting = waitForEvent(worker, 'job:waiting', (e) => e.job.task === 'assembly');
    const job = await baton.enqueue(assembly, null);
    await waiting;
    const kids = (await baton.getJob(job.id)).wait as { kind: 'children'; ids: number[] };
    expect(kids.kind).toBe('children');
    await open(page, url, `#/jobs/${job.id}`);
    await page.waitForSelector('#job-wait[data-kind="children"]');
    expect(await page.locator('#job-wait').textContent()).toBe(`2 child jobs: #${kids.ids[0]}, #${kids.ids[1]}`);
    expect(await page.locator('body').textContent()).toContain('when what it waits for comes'); // its run-at has no deadline: not "9999-12-31"
    expect(await page.locator('#job-steps tr[data-step="baton:child:part#2"] a[data-job]').getAttribute('href')).toBe(`#/jobs/${kids.ids[1]}`);
    await screenshot(page, 'job-children-waiting');
    await page.click(`#job-wait a[data-job="${kids.ids[0]}"]`);
    await page.waitForSelector('#job-parent');
    await screenshot(page, 'job-child');
    expect(await page.locator('#job-parent a').getAttribute('href')).toBe(`#/jobs/${job.id}`);
    const done = waitForEvent(worker, 'job:completed', (e) => e.job.id === job.id);
    release();
    expect((await done).result).toEqual([1, 2]);
    expect(pageErrors).toEqual([]);
  });

  it('shows a <script> payload and error message as text, and never runs them', async () => {
    const { baton, kit, worker, url, page, pageErrors } = await setup();
    // On a queue no worker watches: it stays queued, with its payload on show.
    const parked = await baton.enqueue('hash', { x: XSS }, { queue: 'parked' });
    const failed = waitForEvent(worker, 'job:failed');
    const boom = await baton.enqueue(kit.boom, { message: XSS, kind: 'non-retryable' });
    await failed;

    await open(page, url, `#/jobs/${parked.id}`);
    expect(await page.locator('#job-payload').textContent()).toContain(XSS);
    await page.waitForSelector('text=<script>window.__pwned=1</script>');

    await open(page, url, `#/jobs/${boom.id}`);
    await page.waitForSelector('#job-state[data-state="failed"]');
    expect(await page.locator('#job-errors .msg').textContent()).toBe(XSS);
    expect(await page.locator('#job-payload').textContent()).toContain(XSS);

    await open(page, url, '#/jobs?queue=parked');
    await page.waitForSelector(`tr[data-job-id="${parked.id}"]`);
    expect(await pageGlobal(page, '__pwned')).toBeUndefined();
    // No element was made from the data: no <img src=x> and no injected <script> in the document.
    expect(await page.locator('img[src="x"]').count()).toBe(0);
    expect(await scriptsContaining(page, '__pwned')).toBe(0);
    expect((await baton.getJob(parked.id)).state).toBe('queued');
    expect(pageErrors).toEqual([]);
  });

  it('a ~10 MB payload: the list shows its start, the job page loads with it collapsed (size and a download link), and the download is the whole value', async () => {
    const { db, url, page, pageErrors } = await setup();
    const big = await openBaton({ database: db.url, payloadLimit: 11 * 1024 * 1024 });
    const payload = { blob: 'x'.repeat(10 * 1024 * 1024) };
    // On a queue no worker watches: it stays queued.
    const job = await big.enqueue('hash', payload, { queue: 'parked' });
    const small = await big.enqueue('hash', { small: true }, { queue: 'parked' });

    await open(page, url, '#/jobs?queue=parked');
    await page.waitForSelector(`tr[data-job-id="${job.id}"]`);
    expect(await page.locator(`tr[data-job-id="${job.id}"] td[data-payload]`).textContent()).toBe(`${JSON.stringify(payload).slice(0, PREVIEW_CHARS)}…`);

    await open(page, url, `#/jobs/${job.id}`);
    const collapsed = page.locator('#job-payload.collapsed');
    expect(await collapsed.getAttribute('data-bytes')).toBe(String(JSON.stringify(payload).length));
    expect(await collapsed.textContent()).toContain('10.0 MiB');
    expect(await page.locator('pre').filter({ hasText: 'xxxxxxxxxx' }).count()).toBe(0);
    const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#job-payload a[data-download="payload"]').click()]);
    expect(download.suggestedFilename()).toBe(`job-${job.id}-payload.json`);
    expect(readFileSync((await download.path())!, 'utf8')).toBe(JSON.stringify(payload));

    // A small value is shown inline as before.
    await open(page, url, `#/jobs/${small.id}`);
    expect(JSON.parse((await page.locator('pre#job-payload').textContent())!)).toEqual({ small: true });
    expect(pageErrors).toEqual([]);
  });

  it('the overview shows each queue\'s latency and warns "no worker serves task X", and when no worker serves the queue at all', async () => {
    const { baton, url, page, pageErrors } = await setup();
    // Due an hour ago, of a task the page's worker (queue default) does not register: it waits.
    await baton.enqueue('nobody-serves', {}, { runAt: new Date(Date.now() - 3_600_000) });
    await baton.enqueue('orphan-task', {}, { queue: 'orphan' });
    await open(page, url, '#/queues');
    const warning = page.locator('#unserved [data-unserved-queue="default"]');
    expect(await warning.locator('[data-unserved-task="nobody-serves"]').textContent()).toBe('no worker serves task nobody-serves (1 due job waiting)');
    expect(await warning.textContent()).not.toContain('no live worker serves this queue');
    expect(await page.locator('#unserved [data-unserved-queue="orphan"]').textContent()).toBe('Queue orphan: no worker serves task orphan-task (1 due job waiting) — no live worker serves this queue at all');
    const latency = page.locator('tr[data-queue="default"] td[data-latency]');
    expect(Number(await latency.getAttribute('data-latency'))).toBeGreaterThanOrEqual(3_600_000);
    expect(await latency.textContent()).toMatch(/^6\d min$/);
    await screenshot(page, 'overview-unserved');
    expect(pageErrors).toEqual([]);
  });

  it('with tokens configured: asks for one, keeps it in sessionStorage, reads with the read token and acts only with the admin token', async () => {
    const { baton, kit, worker, url, page } = await setup({ readToken: 'reader-secret', adminToken: 'admin-secret' });
    const failed = waitForEvent(worker, 'job:failed');
    const job = await baton.enqueue(kit.boom, { kind: 'non-retryable' });
    await failed;

    await page.goto(`${url}/#/jobs/${job.id}`);
    await waitForText(page, '#flash', 'enter a token');
    await page.fill('#token-input', 'reader-secret');
    await page.click('#token-form button');
    await page.waitForSelector('#job-state[data-state="failed"]');
    type Storage = { sessionStorage: { getItem(key: string): string | null } };
    expect(await page.evaluate(() => (globalThis as unknown as Storage).sessionStorage.getItem('baton.token'))).toBe('reader-secret');
    await page.waitForSelector('#live.on'); // /api/events with the bearer header

    await page.click('button[data-action="retry"]');
    await waitForText(page, '#flash', 'admin token');
    expect((await baton.getJob(job.id)).state).toBe('failed');

    await page.fill('#token-input', 'admin-secret');
    await page.click('#token-form button');
    const retried = waitForEvent(worker, 'job:failed', (e) => e.job.id === job.id);
    await page.click('button[data-action="retry"]');
    await retried;
    // Retry starts over at attempt 0; the history keeps both failures.
    await waitForCount(page, '#job-errors .attempt-error', 2);
    expect((await baton.getJob(job.id)).errors).toHaveLength(2);
  });

  it('pauses, resumes and triggers schedules and services; screenshots every page filled with real jobs', async () => {
    let reportRuns = 0;
    const cleanup = defineService('cache-cleanup', {
      run: async () => {
        reportRuns++;
        return new Date(Date.now() + 60 * 60_000);
      },
    });
    const { baton, kit, worker, flaky, firstServiceRun, url, page, pageErrors } = await setup({ queues: ['default', 'emails', 'reports'], services: [cleanup] });

    // A mixed history: completed, failed (with stacks), cancelled, running with progress, queued and delayed.
    const completions: Promise<unknown>[] = [];
    for (let i = 0; i < 6; i++) {
      const done = waitForEvent(worker, 'job:completed', (e) => e.job.task === 'hash' && e.job.payload !== null && (e.job.payload as { n?: number }).n === i);
      completions.push(done);
      await baton.enqueue(kit.hash, { n: i, to: `user${i}@example.com` }, { queue: i % 2 ? 'emails' : 'default' });
    }
    await Promise.all(completions);
    const failedBoom = waitForEvent(worker, 'job:failed', (e) => e.job.task === 'boom');
    await baton.enqueue(kit.boom, { message: 'SMTP 550: mailbox unavailable', kind: 'non-retryable' }, { queue: 'emails' });
    await failedBoom;
    const failedFlaky = waitForEvent(worker, 'job:failed', (e) => e.job.task === 'flaky');
    await baton.enqueue(flaky, { label: 'monthly-invoice' }, { queue: 'reports' });
    await failedFlaky;
    const runningSteps = [];
    for (let i = 0; i < 3; i++) {
      const progressed = waitForEvent(worker, 'job:progress', (e) => e.job.payload !== null && (e.job.payload as { steps: number }).steps === LONG + i);
      runningSteps.push(await baton.enqueue(kit.steps, { steps: LONG + i, stepMs: 80 }, { queue: i === 2 ? 'reports' : 'default' }));
      await progressed;
    }
    const toCancel = await baton.enqueue(kit.sleepy, { ms: 60_000 }, { queue: 'emails' });
    await waitForEvent(worker, 'job:claimed', (e) => e.job.id === toCancel.id);
    const cancelled = waitForEvent(worker, 'job:cancelled', (e) => e.job.id === toCancel.id);
    await baton.cancel(toCancel.id, 'user unsubscribed');
    await cancelled;
    await baton.enqueue(kit.hash, { n: 'later' }, { queue: 'reports', delay: 3_600_000 });
    await baton.enqueue('hash', { n: 'parked' }, { queue: 'archive' });
    await baton.schedule('nightly-report', { cron: '0 3 * * *', timezone: 'Europe/Paris', task: 'hash', payload: { report: 'nightly' }, queue: 'reports' });
    await baton.schedule('heartbeat-ping', { every: 60_000, task: 'hash', payload: { ping: true } });
    await firstServiceRun;

    // Overview.
    await open(page, url, '#/queues');
    await page.waitForSelector('tr[data-queue="emails"]');
    expect(await page.locator('[data-total="completed"] .n').textContent()).toBe('6');
    expect(await page.locator('#queues svg.spark').count()).toBeGreaterThanOrEqual(3);
    await screenshot(page, '1-overview');

    // Jobs list, then filtered.
    await open(page, url, '#/jobs');
    await page.waitForSelector(`tr[data-job-id="${runningSteps[0]!.id}"] progress`);
    await screenshot(page, '2-jobs');
    await open(page, url, '#/jobs?state=failed');
    await page.waitForSelector('tr[data-state="failed"]');
    expect(await page.locator('#jobs tbody tr').count()).toBe(2);
    expect(await page.locator('#job-filters select[name="state"]').inputValue()).toBe('failed');

    // Job details: a running one (progress, checkpoint, lease) and a failed one (error, stack).
    await open(page, url, `#/jobs/${runningSteps[0]!.id}`);
    await waitForProgressAbove(page, '#job-progress', 0);
    await waitForText(page, '#job-checkpoint', '"step"');
    await screenshot(page, '3-job-detail-running');
    const failedJob = (await baton.listJobs({ state: 'failed', task: 'boom' }))[0]!;
    await open(page, url, `#/jobs/${failedJob.id}`);
    await page.waitForSelector('#job-errors .attempt-error');
    await screenshot(page, '4-job-detail-failed');

    // Schedules and services: pause, resume, trigger.
    await open(page, url, '#/schedules');
    const nightly = page.locator('tr[data-schedule="nightly-report"]');
    await nightly.locator('button[data-action="pause"]').click();
    await nightly.locator('.badge.paused').waitFor();
    expect((await baton.schedules.get('nightly-report')).paused).toBe(true);
    const triggered = waitForEvent(worker, 'job:completed', (e) => e.job.scheduleName === 'nightly-report');
    await nightly.locator('button[data-action="trigger"]').click();
    await triggered;
    const service = page.locator('tr[data-service="cache-cleanup"]');
    await service.locator('button[data-action="pause"]').click();
    await service.locator('.badge.paused').waitFor();
    await service.locator('button[data-action="resume"]').click();
    await service.locator('.badge.active').waitFor();
    const runsBefore = reportRuns;
    const serviceRan = waitForEvent(worker, 'service:completed', (e) => e.service === 'cache-cleanup');
    await service.locator('button[data-action="trigger"]').click();
    await serviceRan;
    expect(reportRuns).toBeGreaterThan(runsBefore);
    await page.waitForSelector('tr[data-schedule="heartbeat-ping"]');
    await screenshot(page, '5-schedules-services');

    // Workers: this worker, with its running jobs linked.
    await open(page, url, '#/workers');
    const row = page.locator(`tr[data-worker="${worker.id}"]`);
    await row.waitFor();
    await row.locator(`a[href="#/jobs/${runningSteps[0]!.id}"]`).waitFor();
    await screenshot(page, '6-workers');

    for (const job of runningSteps) await baton.cancel(job.id);
    expect(pageErrors).toEqual([]);
  });

  it('pauses and resumes a queue, and bulk-retries its failed jobs after confirming the dry-run count, never more than the count shown', async () => {
    // `late` fails when the test lets it: after the dry run, so one more failed job exists at Confirm.
    let failLate!: () => void;
    const lateGate = new Promise<void>((resolve) => (failLate = resolve));
    const late = defineTask('late', { maxAttempts: 1, handler: async () => lateGate.then(() => { throw new Error('late failure'); }) });
    const { baton, worker, flaky, flakyState, url, page, pageErrors } = await setup({ extraTasks: [late] });
    const failures = collectEvents(worker, 'job:failed', 3);
    const failed = await Promise.all([1, 2, 3].map((n) => baton.enqueue(flaky, { label: `bulk ${n}` })));
    await failures;
    const lateStarted = waitForEvent(worker, 'job:claimed', (e) => e.job.task === 'late');
    const lateJob = await baton.enqueue(late, null);
    await lateStarted;

    await open(page, url, '#/queues');
    const row = page.locator('tr[data-queue="default"]');
    await row.locator('button[data-action="pause-queue"]').click();
    await page.waitForSelector('tr[data-queue="default"][data-paused="true"] .badge.paused');
    expect((await baton.queues.list()).find((q) => q.name === 'default')?.paused).toBe(true);
    const parked = await baton.enqueue('hash', { parked: true });
    await worker.loops.fetch(); // the worker claims nothing from the paused queue
    expect((await baton.getJob(parked.id)).state).toBe('queued');

    // The dry run's count is shown first; nothing changes until Confirm.
    await row.locator('button[data-action="retry-failed"]').click();
    await waitForText(page, 'tr[data-queue="default"] [data-confirm="retry-failed"]', 'Retry 3 failed jobs of default?');
    expect((await baton.listJobs({ state: 'failed' })).length).toBe(3);
    const lateFailed = waitForEvent(worker, 'job:failed', (e) => e.job.id === lateJob.id);
    failLate();
    await lateFailed; // 4 failed jobs now; the operator confirmed 3
    flakyState.allow = true;
    await row.locator('button[data-action="confirm-retry-failed"]').click();
    await waitForText(page, '#flash', '3 failed jobs of default queued again');
    for (const job of failed) expect((await baton.getJob(job.id)).state).toBe('queued'); // paused: queued, not run
    expect((await baton.getJob(lateJob.id)).state).toBe('failed'); // not shown in the count: untouched

    const completed = collectEvents(worker, 'job:completed', 4);
    await row.locator('button[data-action="resume-queue"]').click();
    expect((await completed).map((e) => e.job.id).sort((a, b) => a - b)).toEqual([...failed.map((j) => j.id), parked.id].sort((a, b) => a - b));
    await page.waitForSelector('tr[data-queue="default"][data-paused="false"] .badge.active');
    await screenshot(page, '7-queue-pause-retry');
    expect(pageErrors).toEqual([]);
  });

  it('sets and removes a queue\'s fleet-wide limit from the page, and shows running / limit', async () => {
    const { baton, page, url, pageErrors } = await setup();
    await baton.enqueue('hash', { n: 1 });
    await open(page, url, '#/queues');
    const row = page.locator('tr[data-queue="default"]');
    await row.locator('input[data-limit-input="default"]').fill('2');
    await row.locator('button[data-action="set-limit"]').click();
    await waitForText(page, '#flash', 'Queue default: at most 2 running across the fleet');
    expect((await baton.queues.list()).find((q) => q.name === 'default')?.concurrency).toBe(2);
    await page.waitForSelector('tr[data-queue="default"] td[data-limit="2"]');
    expect(await row.locator('td[data-limit="2"]').textContent()).toMatch(/^\d+ \/ 2$/);

    await row.locator('input[data-limit-input="default"]').fill('');
    await row.locator('button[data-action="set-limit"]').click();
    await waitForText(page, '#flash', 'Queue default: no limit');
    expect((await baton.queues.list()).find((q) => q.name === 'default')?.concurrency).toBeNull();
    // A field the operator has focused survives a live refresh, which rebuilds the table
    // (here: a job enqueued elsewhere, on a queue no worker serves), with its focus: what
    // is typed next lands in it.
    await row.locator('input[data-limit-input="default"]').focus();
    await baton.enqueue('hash', { n: 2 }, { queue: 'parked' });
    await page.waitForSelector('tr[data-queue="parked"]');
    // A limit the server refuses (0) is reported, and nothing changes.
    await page.keyboard.type('0');
    await row.locator('button[data-action="set-limit"]').click();
    await waitForText(page, '#flash', 'Set limit failed');
    await waitForText(page, '#flash', 'invalid queue concurrency');
    expect((await baton.queues.list()).find((q) => q.name === 'default')?.concurrency).toBeNull();
    // Text the number field cannot parse reads as '': refused in the page, never sent as
    // "no limit", even after a live refresh (here: the limit set elsewhere) rebuilt the table.
    await row.locator('input[data-limit-input="default"]').pressSequentially('5-');
    await baton.queues.setConcurrency('default', 3);
    await page.waitForSelector('tr[data-queue="default"] td[data-limit="3"]');
    await row.locator('button[data-action="set-limit"]').click();
    await waitForText(page, '#flash', 'not a number');
    expect((await baton.queues.list()).find((q) => q.name === 'default')?.concurrency).toBe(3);
    // The browser logs the refused request (400) itself; nothing else went wrong.
    expect(pageErrors.filter((e) => !/status of 400/.test(e))).toEqual([]);
  });

  it("sets a queue's rate from the page, shows whether each setting is the code's or an override, and puts the code's back", async () => {
    const declared = defineQueue('default', { concurrency: 4, rateLimit: { limit: 5, periodMs: 1000 } });
    const mailer = defineTask('mailer', { queue: declared, handler: () => 'sent' });
    const { baton, page, url, pageErrors } = await setup({ extraTasks: [mailer] });
    const settings = async () => {
      const q = (await baton.queues.list()).find((x) => x.name === 'default')!;
      return { concurrency: q.concurrency, rate: q.rateLimit && { limit: q.rateLimit.limit, periodMs: q.rateLimit.periodMs }, sources: q.sources };
    };
    await open(page, url, '#/queues');
    const row = page.locator('tr[data-queue="default"]');
    await waitForText(page, 'td[data-rate="default"]', '0 / 5 per 1s (code)');
    await waitForText(page, 'tr[data-queue="default"] td[data-limit-source="code"]', '/ 4 (code)');

    await row.locator('input[data-rate-limit-input="default"]').fill('2');
    await row.locator('input[data-rate-period-input="default"]').fill('60000');
    await row.locator('button[data-action="set-rate"]').click();
    await waitForText(page, '#flash', 'Queue default: at most 2 starts per 60000 ms across the fleet');
    expect(await settings()).toMatchObject({ rate: { limit: 2, periodMs: 60_000 }, sources: { rateLimit: 'override', concurrency: 'code' } });
    await waitForText(page, 'td[data-rate="default"]', '0 / 2 per 60s (override)');

    // Only the limit given: refused in the page, nothing sent.
    await row.locator('input[data-rate-limit-input="default"]').fill('3');
    await row.locator('input[data-rate-period-input="default"]').fill('');
    await row.locator('button[data-action="set-rate"]').click();
    await waitForText(page, '#flash', 'give both the starts and the period');
    expect((await settings()).rate).toEqual({ limit: 2, periodMs: 60_000 });

    await row.locator('button[data-action="clear-rateLimit"]').click();
    await waitForText(page, '#flash', 'Queue default: the rate its code declares is in force');
    expect(await settings()).toMatchObject({ rate: { limit: 5, periodMs: 1000 }, sources: { rateLimit: 'code' } });
    await waitForText(page, 'td[data-rate="default"]', '0 / 5 per 1s (code)');

    // Both fields empty: no rate, as an override of the declared one.
    await row.locator('input[data-rate-limit-input="default"]').fill('');
    await row.locator('input[data-rate-period-input="default"]').fill('');
    await row.locator('button[data-action="set-rate"]').click();
    await waitForText(page, '#flash', 'Queue default: no rate limit');
    expect(await settings()).toMatchObject({ rate: null, sources: { rateLimit: 'override' } });
    await waitForText(page, 'td[data-rate="default"]', 'none (override)');
    expect(pageErrors).toEqual([]);
  });

  it("shows each queue's rate window and the busiest concurrency keys (running / limit, queued)", async () => {
    const { baton, kit, page, url, pageErrors } = await setup({ queues: ['elsewhere'] });
    // The worker serves another queue: the keyed jobs wait, as an operator would see a backlog.
    for (const customer of ['acme', 'acme', 'acme', 'globex']) await baton.enqueue(kit.perCustomer, { customer, ms: 1, tick: 1 });
    await baton.queues.setRateLimit('default', { limit: 10, periodMs: 1000 });
    await baton.queues.setRateLimit('default', { limit: 2, periodMs: 60_000 }, { perKey: true });
    await open(page, url, '#/queues');
    await waitForText(page, 'td[data-rate="default"]', '0 / 10 per 1s, key 0 / 2 per 60s');
    await waitForText(page, '#keys tr[data-key="acme"]', 'acme');
    expect(await page.locator('#keys tbody tr').evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent)))).toEqual([
      ['default', 'acme', '0 / 1', '3'],
      ['default', 'globex', '0 / 1', '1'],
    ]);
    await screenshot(page, '8-rates-and-keys');
    expect(pageErrors).toEqual([]);
  });

  it('"Retry failed…" whose dry run finds nothing (retried elsewhere meanwhile) says so and offers no Confirm', async () => {
    const { baton, worker, flaky, flakyState, url, page, pageErrors } = await setup();
    const failedEvent = waitForEvent(worker, 'job:failed');
    await baton.enqueue(flaky, { label: 'retried elsewhere' });
    await failedEvent;
    await open(page, url, '#/queues');
    const row = page.locator('tr[data-queue="default"]');
    await row.locator('button[data-action="retry-failed"]').waitFor();
    // Someone else retries the failed job between the click and the dry run.
    await page.route('**/api/jobs/retry-many', async (route) => {
      flakyState.allow = true;
      await baton.jobs.retryMany({ queue: 'default', state: 'failed' });
      await route.continue();
    });
    await row.locator('button[data-action="retry-failed"]').click();
    await waitForText(page, '#flash', 'No failed jobs of default to retry');
    expect(await page.locator('[data-confirm="retry-failed"]').count()).toBe(0);
    expect(pageErrors).toEqual([]);
  });
});

