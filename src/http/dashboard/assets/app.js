// Baton dashboard: one vanilla ES module, no build step, no dependencies.
//
// Views by hash route: #/queues (overview), #/jobs?state=&queue=&task=, #/jobs/:id,
// #/schedules (schedules and services), #/workers. Every figure comes from the JSON
// API next to this page (relative URLs, so the app may be mounted under a prefix).
// Live: /api/events (Server-Sent Events, read with fetch so the bearer token can be
// sent) → each `change` event re-fetches the visible view; while that stream is down,
// the view is polled every few seconds instead. The job page follows its own job's
// stream (/api/events?job=ID) instead: it is fetched once and updated from the events.
//
// Payloads, results, errors and every other value from the API are user data: they
// reach the page only through text nodes (`textContent` / createTextNode) and
// attribute setters, never through innerHTML — a payload of `<script>` shows as text.

const TOKEN_KEY = 'baton.token';
const STATES = ['queued', 'running', 'completed', 'failed', 'cancelled'];
const TERMINAL = ['completed', 'failed', 'cancelled'];
const PAGE = 50;
const MAX_LIMIT = 500;
const POLL_MS = 3000;
/** A job's value larger than this (bytes of its JSON text) is shown collapsed on the job page: its size and a download link. */
const LARGE_VALUE = 64 * 1024;

// ---------------------------------------------------------------- DOM helpers

/**
 * Builds an element. `attrs`: `class`, `on<event>` listeners, boolean/properties
 * (`value`, `max`, `disabled`, `checked`, `selected`), anything else via setAttribute.
 * Children: nodes, or strings/numbers as text nodes; null/undefined/false skipped.
 */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (key === 'class') el.className = value;
    else if (key === 'value' || key === 'max' || key === 'disabled' || key === 'checked' || key === 'selected') el[key] = value;
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

const SVG = 'http://www.w3.org/2000/svg';
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs ?? {})) el.setAttribute(key, String(value));
  return append(el, children);
}

// ---------------------------------------------------------------- formatting

const pad = (n) => String(n).padStart(2, '0');

function formatTime(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

function ago(iso) {
  if (!iso) return '';
  const ms = Date.now() - new Date(iso).getTime();
  const future = ms < 0;
  const abs = Math.abs(ms);
  const text =
    abs < 1000 ? 'now' : abs < 60_000 ? `${Math.round(abs / 1000)}s` : abs < 3_600_000 ? `${Math.round(abs / 60_000)}m` : abs < 86_400_000 ? `${Math.round(abs / 3_600_000)}h` : `${Math.round(abs / 86_400_000)}d`;
  if (text === 'now') return 'now';
  return future ? `in ${text}` : `${text} ago`;
}

/** A time cell: local time, relative time beside it, ISO in the tooltip. */
function time(iso) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  return h('span', { title: String(iso) }, formatTime(iso), ' ', h('span', { class: 'muted' }, `(${ago(iso)})`));
}

function json(value) {
  if (value === undefined) return '—';
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

/** "812 B", "64.0 KiB", "10.0 MiB". */
function size(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  return bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** A list's preview of a value ({ text, bytes, truncated }, or null): its start, an ellipsis when cut, the size in the tooltip. */
function previewText(preview) {
  if (!preview) return h('span', { class: 'muted' }, '—');
  return h('span', { class: 'clip mono', title: `${size(preview.bytes)}${preview.truncated ? ', cut' : ''}` }, preview.truncated ? `${preview.text}…` : preview.text);
}

/**
 * A link that downloads one of a job's values whole (GET api/jobs/:id/<field>, raw JSON).
 * With a token set, the file is fetched with it (a plain link cannot send the header).
 */
function downloadLink(id, field) {
  const path = `api/jobs/${encodeURIComponent(id)}/${field}`;
  const name = `job-${id}-${field}.json`;
  return h('a', {
    href: path,
    download: name,
    'data-download': field,
    onclick: async (event) => {
      if (!token()) return;
      event.preventDefault();
      try {
        const res = await fetch(apiUrl(path), { headers: headers(), cache: 'no-store' });
        if (!res.ok) throw new Error(`${res.status} ${res.statusText}`);
        const url = URL.createObjectURL(await res.blob());
        h('a', { href: url, download: name }).click();
        setTimeout(() => URL.revokeObjectURL(url), 60_000);
      } catch (error) {
        flash(`Download failed: ${error.message}`);
      }
    },
  }, `Download ${field} (JSON)`);
}

/**
 * One of a job's values on its page: pretty JSON when small; over LARGE_VALUE bytes (the API
 * then sends only its preview, `<field>Preview`), collapsed (its size and a download link)
 * so that the page never lays out megabytes of text.
 */
function valueBlock(job, field) {
  const value = job[field];
  const preview = job[`${field}Preview`];
  if (!preview && (value === null || value === undefined)) return h('pre', { id: `job-${field}` }, '—');
  const bytes = preview ? preview.bytes : new Blob([JSON.stringify(value)]).size;
  if (!preview && bytes <= LARGE_VALUE) return h('pre', { id: `job-${field}` }, json(value));
  return h(
    'div',
    { id: `job-${field}`, class: 'collapsed', 'data-bytes': bytes },
    h('span', { class: 'muted' }, `${size(bytes)}: too large to show here. `),
    downloadLink(job.id, field),
  );
}

function badge(text, kind = text) {
  return h('span', { class: `badge ${kind}` }, text);
}

function duration(ms) {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  return `${Math.round(ms / 60_000)} min`;
}

/** A progress bar for a job's `progress` ({ current, total?, message? }). */
function progressBar(job, big = false) {
  const p = job.progress;
  const attrs = { 'data-job-id': job.id, class: big ? 'big' : undefined, id: big ? 'job-progress' : undefined };
  if (!p) {
    if (job.state === 'completed') return h('span', {}, h('progress', { ...attrs, max: 1, value: 1 }), h('span', { class: 'pct' }, 'done'));
    return h('span', { class: 'muted' }, '—');
  }
  if (typeof p.total === 'number' && p.total > 0) {
    const pct = Math.max(0, Math.min(100, Math.round((p.current / p.total) * 100)));
    return h(
      'span',
      {},
      h('progress', { ...attrs, max: p.total, value: p.current, title: `${p.current} / ${p.total}` }),
      h('span', { class: 'pct' }, `${pct}% (${p.current}/${p.total})`),
      p.message ? h('span', { class: 'pct' }, p.message) : null,
    );
  }
  // No total: an indeterminate bar and the count.
  return h('span', {}, h('progress', { ...attrs, title: String(p.current) }), h('span', { class: 'pct' }, String(p.current)), p.message ? h('span', { class: 'pct' }, p.message) : null);
}

// ---------------------------------------------------------------- API

function token() {
  return sessionStorage.getItem(TOKEN_KEY) ?? '';
}

function headers(extra = {}) {
  const result = { Accept: 'application/json', ...extra };
  const t = token();
  if (t) result.Authorization = `Bearer ${t}`;
  return result;
}

const apiUrl = (path) => new URL(path, document.baseURI).toString();

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Calls the API; JSON in and out. Writes send Content-Type application/json (the server requires it). */
async function api(path, { method = 'GET', body } = {}) {
  const init = { method, headers: headers(), cache: 'no-store' };
  if (method !== 'GET') {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body ?? {});
  }
  let res;
  try {
    res = await fetch(apiUrl(path), init);
  } catch (error) {
    throw new ApiError(0, 'network', `cannot reach the server: ${error.message}`);
  }
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const err = data && data.error;
    let message = err && err.message ? err.message : `${res.status} ${res.statusText}`;
    if (res.status === 401) message = `${message} — enter a token (top right)`;
    if (res.status === 403 && method !== 'GET' && !/admin token/.test(message)) message = `${message} — this needs the admin token`;
    throw new ApiError(res.status, err && err.code, message);
  }
  return data;
}

/** The list in a response: the array itself, or its `key` / `items` field. */
function listOf(data, key) {
  if (Array.isArray(data)) return data;
  if (data && Array.isArray(data[key])) return data[key];
  if (data && Array.isArray(data.items)) return data.items;
  return [];
}

// ---------------------------------------------------------------- flash messages

let flashTimer;
function flash(message, ok = false) {
  const el = document.getElementById('flash');
  el.textContent = message;
  el.className = ok ? 'flash ok' : 'flash';
  el.hidden = false;
  clearTimeout(flashTimer);
  flashTimer = setTimeout(() => (el.hidden = true), ok ? 3000 : 8000);
}

/**
 * A button that POSTs `body` to `path` and refreshes the view; disabled while in
 * flight. `done` is the message on success, or a function of the response that
 * returns it; `after` runs once the call ended, either way.
 */
/**
 * Makes `inputs` a draft from the moment one takes focus (`keep`), so a live refresh, which
 * rebuilds the table, neither replaces a field the operator is about to type in nor drops
 * its focus; focus alone, with nothing typed, stops being a draft when it leaves (`drop`).
 */
function keepAsDraft(inputs, keep, drop) {
  const typed = () => inputs.some((input) => input.validity.badInput || input.value !== input.dataset.shown);
  for (const input of inputs) {
    input.dataset.shown ??= input.value; // the value it was built with, kept across rebuilds
    input.onfocus = keep;
    input.oninput = keep;
    input.onblur = () => { if (!typed()) drop(); };
  }
}

function actionButton(label, path, { kind, action, done, body, after, method = 'POST' } = {}) {
  const button = h('button', {
    class: kind,
    'data-action': action,
    type: 'button',
    onclick: async () => {
      button.disabled = true;
      try {
        const response = await api(path, { method, body: (typeof body === 'function' ? body() : body) ?? {} });
        flash((typeof done === 'function' ? done(response) : done) ?? `${label}: done`, true);
      } catch (error) {
        flash(`${label} failed: ${error.message}`);
      } finally {
        button.disabled = false;
        after?.();
        refreshSoon();
      }
    },
  }, label);
  return button;
}

function jobActions(job) {
  const buttons = [];
  if (job.state === 'queued' || job.state === 'running') {
    buttons.push(actionButton('Cancel', `api/jobs/${job.id}/cancel`, { kind: 'danger', action: 'cancel', done: `Cancel requested for job #${job.id}`, body: { reason: 'cancelled from the dashboard' } }));
  }
  // A delayed, retrying or snoozed job (queued, due later) can be run now; a waiting one
  // (a suspended ctx.sleep or ctx.receive) waits for its time or message, not for a hand.
  if (job.state === 'queued' && viewOf(job) !== 'waiting' && !job.wait && new Date(job.runAt).getTime() > Date.now()) {
    buttons.push(actionButton('Run now', `api/jobs/${job.id}/promote`, { kind: 'primary', action: 'promote', done: `Job #${job.id} promoted: due now` }));
  }
  if (job.state === 'failed' || job.state === 'cancelled') {
    // Retry resumes from the checkpoint the last run saved; from scratch clears it (and the progress).
    buttons.push(actionButton('Retry', `api/jobs/${job.id}/retry`, { kind: 'primary', action: 'retry', done: `Job #${job.id} queued again` }));
    buttons.push(actionButton('Retry from scratch', `api/jobs/${job.id}/retry`, { action: 'retry-fresh', body: { fresh: true }, done: `Job #${job.id} queued again, from scratch` }));
  }
  return h('span', { class: 'actions' }, buttons);
}

const viewOf = (job) => job.view ?? job.state;

/** A receive's deadline when it has none: NEVER (9999-12-31T23:59:59.999Z). */
const NEVER_ISO = '9999-12-31T23:59:59.999Z';

/** Links to jobs by id: `#12, #13`. */
const jobLinks = (ids) => ids.flatMap((id, i) => [i ? ', ' : null, h('a', { href: `#/jobs/${id}`, 'data-job': String(id) }, `#${id}`)]);

/** What a waiting job waits for (job.wait), in words: "sleep until T", "message on "topic" until T" (or "no deadline"), "child jobs #12, #13". */
function waitsFor(wait) {
  const until = (iso) => (iso >= NEVER_ISO ? h('span', { class: 'muted' }, 'no deadline') : h('span', {}, 'until ', time(iso)));
  if (wait.kind === 'sleep') return h('span', { id: 'job-wait', 'data-kind': 'sleep' }, 'sleep ', until(wait.until));
  if (wait.kind === 'children') return h('span', { id: 'job-wait', 'data-kind': 'children' }, `${wait.ids.length} child job${wait.ids.length === 1 ? '' : 's'}: `, ...jobLinks(wait.ids));
  return h('span', { id: 'job-wait', 'data-kind': 'message' }, 'message on ', h('span', { class: 'mono' }, JSON.stringify(wait.topic)), ' ', until(wait.until));
}

/**
 * A job's step log (GET api/jobs/:id/steps), one row per step: its name, state, the attempt
 * that stored it (and its tries), start, duration, result size, and its error or, for a
 * waiting receive, its deadline.
 */
function stepsPanel(steps) {
  const kinds = { completed: 'completed', failed: 'failed', waiting: 'waiting' };
  const note = (step) => {
    if (step.error !== null) return h('span', { class: 'msg' }, step.error);
    if (step.state === 'waiting') return step.until ? h('span', {}, 'until ', time(step.until)) : h('span', { class: 'muted' }, 'no deadline');
    return h('span', { class: 'muted' }, '—');
  };
  return h(
    'div',
    { class: 'panel', id: 'job-steps' },
    h('h2', {}, `Steps (${steps.length})`),
    steps.length
      ? h(
          'table',
          {},
          h('thead', {}, h('tr', {}, ['#', 'Step', 'State', 'Attempt', 'Started', 'Duration', 'Result', 'Error / until'].map((t) => h('th', {}, t)))),
          h(
            'tbody',
            {},
            steps.map((step) =>
              h(
                'tr',
                { 'data-step': step.name, 'data-state': step.state },
                h('td', {}, String(step.seq)),
                // A child's step holds its id: the parent's step log links each child (the family tree, one level per page).
                h('td', { class: 'mono' }, step.name, step.name.startsWith('baton:child:') && step.state === 'completed' ? h('span', {}, ' → ', ...jobLinks([step.result])) : null),
                h('td', {}, badge(step.state, kinds[step.state])),
                h('td', {}, step.tries > 1 ? `${step.attempt} (${step.tries} tries)` : String(step.attempt)),
                h('td', { title: step.startedAt }, formatTime(step.startedAt)),
                h('td', {}, step.durationMs === null ? '—' : duration(step.durationMs)),
                h('td', {}, step.resultBytes === null ? '—' : size(step.resultBytes)),
                h('td', {}, note(step)),
              ),
            ),
          ),
        )
      : h('div', { class: 'muted' }, 'No steps.'),
  );
}

// ---------------------------------------------------------------- views

/** A queue's rate limits as `3 / 10 per 1s` (per key: `key 1 / 2 per 500ms`), or '—'; for a queue declared in code, each with its source. */
function rateText(q) {
  const period = (ms) => (ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`);
  const one = (r, prefix, setting) => `${prefix}${r ? `${r.used} / ${r.limit} per ${period(r.periodMs)}` : 'none'}${sourceText(q, setting)}`;
  const parts = [
    (q.rateLimit || q.sources?.rateLimit) && one(q.rateLimit, '', 'rateLimit'),
    (q.keyRateLimit || q.sources?.keyRateLimit) && one(q.keyRateLimit, 'key ', 'keyRateLimit'),
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : '—';
}

/** A queue's latency (ms): '—' when no job is due, else "850 ms", "12 s", "4 min". */
function latencyText(ms) {
  return ms ? duration(ms) : '—';
}

/**
 * One warning per queue whose due jobs no live worker serves: "no worker serves task X"
 * (with the due jobs), or, when no live worker serves the queue at all, that too.
 */
function unservedWarnings(queues) {
  const stuck = queues.filter((q) => (q.unservedTasks ?? []).length > 0);
  if (!stuck.length) return '';
  return h(
    'div',
    { class: 'panel warning', id: 'unserved', role: 'alert' },
    stuck.map((q) =>
      h(
        'div',
        { 'data-unserved-queue': q.queue },
        h('strong', {}, `Queue ${q.queue}: `),
        q.unservedTasks.map((t, i) => [i ? '; ' : '', h('span', { 'data-unserved-task': t.task }, `no worker serves task ${t.task} (${t.jobs} due job${t.jobs === 1 ? '' : 's'} waiting)`)]),
        q.workers === 0 ? h('span', { class: 'muted' }, ' — no live worker serves this queue at all') : null,
      ),
    ),
  );
}

/**
 * For a queue declared in code (defineQueue): where a setting in force comes from,
 * ` (code)` or ` (override)`; '' for a queue not declared in code or a setting set nowhere.
 */
function sourceText(q, setting) {
  const source = q.sources?.[setting];
  return q.declared && source ? ` (${source})` : '';
}

/** Overview: counts by state per queue, throughput sparklines, the busiest concurrency keys. */
const queuesView = {
  title: 'Overview',
  nav: 'queues',
  mount(root) {
    this.body = h('div');
    root.append(h('h1', {}, 'Queues'), this.body);
  },
  async refresh() {
    // Both reads before the table is built: no await may come between building it (which
    // takes the limit fields being typed in, limitDrafts) and swapping it in, or text typed
    // meanwhile would go to a field the swap drops.
    const [data, keysData] = await Promise.all([api('api/queues'), api('api/queues/keys?limit=10')]);
    // Read before the build, which moves a kept draft field out of the page and so drops its focus.
    const focused = document.activeElement;
    const queues = listOf(data, 'queues');
    const totals = Object.fromEntries(STATES.map((st) => [st, 0]));
    for (const q of queues) for (const st of STATES) totals[st] += q.counts?.[st] ?? 0;
    const cards = h(
      'div',
      { class: 'cards' },
      STATES.map((st) => h('a', { class: 'card', href: `#/jobs?state=${st}`, 'data-total': st }, h('div', { class: 'n' }, String(totals[st])), h('div', { class: 'l' }, st))),
    );
    const table = queues.length
      ? h(
          'table',
          { id: 'queues' },
          h('thead', {}, h('tr', {}, h('th', {}, 'Queue'), h('th', {}, 'Status'), h('th', { class: 'num', title: 'running / fleet-wide limit' }, 'Limit'), h('th', { class: 'num', title: 'starts in the sliding window / rate limit (per key: the busiest key)' }, 'Rate'), h('th', { class: 'num', title: 'age of the oldest due queued job' }, 'Latency'), STATES.map((st) => h('th', { class: 'num' }, st)), h('th', {}, 'Throughput, last 15 min'), h('th', { class: 'num' }, 'Last minute'), h('th', {}, 'Actions'))),
          h(
            'tbody',
            {},
            queues.map((q) => {
              const last = q.throughput?.[q.throughput.length - 1];
              return h(
                'tr',
                { 'data-queue': q.queue, 'data-paused': q.paused ? 'true' : 'false' },
                h('td', {}, h('a', { href: `#/jobs?queue=${encodeURIComponent(q.queue)}` }, q.queue)),
                h('td', { title: q.pausedAt ? `paused at ${q.pausedAt}` : undefined }, q.paused ? badge('paused') : badge('active')),
                h('td', { class: 'num', 'data-limit': q.concurrency ?? '', 'data-limit-source': q.sources?.concurrency ?? '' },
                  (q.concurrency == null ? (q.sources?.concurrency ? 'none' : '—') : `${q.counts?.running ?? 0} / ${q.concurrency}`) + sourceText(q, 'concurrency')),
                h('td', { class: 'num', 'data-rate': q.queue, 'data-rate-source': q.sources?.rateLimit ?? '' }, rateText(q)),
                h('td', { class: 'num', 'data-latency': q.latencyMs ?? 0 }, latencyText(q.latencyMs)),
                STATES.map((st) => h('td', { class: 'num' }, h('a', { href: `#/jobs?queue=${encodeURIComponent(q.queue)}&state=${st}` }, String(q.counts?.[st] ?? 0)))),
                h('td', {}, sparkline(q.throughput ?? [])),
                h('td', { class: 'num' }, last ? `${last.completed} ok / ${last.failed} failed` : '—'),
                h('td', {}, this.queueActions(q)),
              );
            }),
          ),
        )
      : h('div', { class: 'panel empty' }, 'No jobs yet.');
    const keys = listOf(keysData, 'keys');
    const busiest = keys.length
      ? h(
          'div',
          { class: 'panel' },
          h('h2', {}, 'Busiest concurrency keys'),
          h(
            'table',
            { id: 'keys' },
            h('thead', {}, h('tr', {}, h('th', {}, 'Queue'), h('th', {}, 'Key'), h('th', { class: 'num', title: 'running / per-key limit' }, 'Running'), h('th', { class: 'num' }, 'Queued'))),
            h(
              'tbody',
              {},
              keys.map((k) =>
                h(
                  'tr',
                  { 'data-key': k.key },
                  h('td', {}, k.queue),
                  h('td', {}, k.key),
                  h('td', { class: 'num' }, k.limit == null ? String(k.running) : `${k.running} / ${k.limit}`),
                  h('td', { class: 'num' }, String(k.queued)),
                ),
              ),
            ),
          ),
        )
      : '';
    this.body.replaceChildren(cards, unservedWarnings(queues), table, busiest);
    if (focused !== document.activeElement && focused?.isConnected) focused.focus(); // a kept draft field
  },
  /** The bulk retry awaiting confirmation: { queue, count } (kept across live refreshes), or null. */
  pending: null,
  /**
   * Limit fields focused or typed in but not yet set, by queue: the input elements themselves, so a
   * live refresh (which rebuilds the table) keeps the operator's raw text, even text a
   * number field cannot parse, and its focus.
   */
  limitDrafts: new Map(),
  /** Rate fields typed in but not yet set, by queue: { limit, period } input elements, kept as limitDrafts are. */
  rateDrafts: new Map(),
  /**
   * Pause or Resume; and "Retry failed…", which first asks the server for the
   * dry-run count and shows it with Confirm / Keep before anything changes.
   */
  queueActions(q) {
    const name = encodeURIComponent(q.queue);
    // The fleet-wide limit: a number (1..1000000), or empty for none.
    const limitInput = this.limitDrafts.get(q.queue) ?? h('input', {
      type: 'number', min: '1', max: '1000000', placeholder: 'no limit', 'data-limit-input': q.queue, size: '6',
      value: q.concurrency ?? '',
    });
    keepAsDraft([limitInput], () => this.limitDrafts.set(q.queue, limitInput), () => this.limitDrafts.delete(q.queue));
    const setLimit = actionButton('Set limit', `api/queues/${name}/concurrency`, {
      method: 'PUT',
      action: 'set-limit',
      body: () => {
        // A number field reads '' for text it cannot parse ("5-"): never send that as "no limit".
        if (limitInput.validity.badInput) throw new Error('not a number: type 1..1000000, or clear the field for no limit');
        return { concurrency: limitInput.value === '' ? null : Number(limitInput.value) };
      },
      after: () => this.limitDrafts.delete(q.queue),
      done: (r) => (r.concurrency === null ? `Queue ${q.queue}: no limit` : `Queue ${q.queue}: at most ${r.concurrency} running across the fleet`),
    });
    // The queue's rate: starts (1..10000) per period (ms, 1..604800000); both empty for none.
    const rateDraft = this.rateDrafts.get(q.queue) ?? {
      limit: h('input', { type: 'number', min: '1', max: '10000', placeholder: 'no rate', 'data-rate-limit-input': q.queue, size: '5', value: q.rateLimit?.limit ?? '' }),
      period: h('input', { type: 'number', min: '1', max: '604800000', placeholder: 'per ms', 'data-rate-period-input': q.queue, size: '7', value: q.rateLimit?.periodMs ?? '' }),
    };
    keepAsDraft([rateDraft.limit, rateDraft.period], () => this.rateDrafts.set(q.queue, rateDraft), () => this.rateDrafts.delete(q.queue));
    const setRate = actionButton('Set rate', `api/queues/${name}/rate-limit`, {
      method: 'PUT',
      action: 'set-rate',
      body: () => {
        const { limit: l, period: p } = rateDraft;
        if (l.validity.badInput || p.validity.badInput) throw new Error('not a number: type the starts (1..10000) and the period in ms, or clear both for no rate');
        if ((l.value === '') !== (p.value === '')) throw new Error('give both the starts and the period in ms, or clear both for no rate');
        return { rate: l.value === '' ? null : { limit: Number(l.value), periodMs: Number(p.value) } };
      },
      after: () => this.rateDrafts.delete(q.queue),
      done: (r) => (r.rate === null ? `Queue ${q.queue}: no rate limit` : `Queue ${q.queue}: at most ${r.rate.limit} starts per ${r.rate.periodMs} ms across the fleet`),
    });
    // A queue declared in code whose setting is overridden: a button puts the code's value back.
    const useCode = (setting, path, label) => (q.declared && q.sources?.[setting] === 'override'
      ? actionButton(label, path, { method: 'DELETE', action: `clear-${setting}`, done: `Queue ${q.queue}: the ${setting === 'concurrency' ? 'limit' : 'rate'} its code declares is in force` })
      : null);
    const limit = h('span', { class: 'limit' }, limitInput, setLimit, useCode('concurrency', `api/queues/${name}/concurrency`, 'Use code limit'),
      rateDraft.limit, rateDraft.period, setRate, useCode('rateLimit', `api/queues/${name}/rate-limit`, 'Use code rate'));
    const toggle = q.paused
      ? actionButton('Resume', `api/queues/${name}/resume`, { kind: 'primary', action: 'resume-queue', done: `Queue ${q.queue} resumed` })
      : actionButton('Pause', `api/queues/${name}/pause`, { action: 'pause-queue', done: `Queue ${q.queue} paused: no worker claims from it` });
    const pending = this.pending && this.pending.queue === q.queue ? this.pending : null;
    if (pending) {
      return h(
        'span',
        { class: 'actions' },
        toggle,
        h('span', { 'data-confirm': 'retry-failed' }, `Retry ${pending.count} failed job${pending.count === 1 ? '' : 's'} of ${q.queue}?`),
        // limit: never more jobs than the count shown, even if more failed since the dry run.
        actionButton('Confirm', 'api/jobs/retry-many', {
          kind: 'primary',
          action: 'confirm-retry-failed',
          body: { queue: q.queue, state: 'failed', limit: pending.count },
          done: (result) => `${result.retried} failed job${result.retried === 1 ? '' : 's'} of ${q.queue} queued again` +
            (result.retried < pending.count ? ` (${pending.count - result.retried} changed meanwhile or have a key a live job holds)` : ''),
          after: () => (this.pending = null),
        }),
        h('button', { type: 'button', 'data-action': 'keep', onclick: () => ((this.pending = null), refreshSoon()) }, 'Keep'),
        limit,
      );
    }
    const retry = (q.counts?.failed ?? 0) > 0
      ? h('button', {
          type: 'button',
          'data-action': 'retry-failed',
          onclick: async (event) => {
            event.currentTarget.disabled = true;
            try {
              const dry = await api('api/jobs/retry-many', { method: 'POST', body: { queue: q.queue, state: 'failed', dryRun: true } });
              // Retried elsewhere meanwhile: nothing to confirm.
              if (dry.matched === 0) flash(`No failed jobs of ${q.queue} to retry`, true);
              else this.pending = { queue: q.queue, count: dry.matched };
            } catch (error) {
              flash(`Retry failed jobs: ${error.message}`);
            } finally {
              refreshSoon();
            }
          },
        }, 'Retry failed…')
      : null;
    return h('span', { class: 'actions' }, toggle, retry, limit);
  },
};

/** Completed (green) and failed (red, stacked on top) per minute, as inline SVG bars; oldest left. */
function sparkline(points) {
  const width = 180;
  const height = 30;
  const max = Math.max(1, ...points.map((p) => (p.completed ?? 0) + (p.failed ?? 0)));
  const slot = width / Math.max(1, points.length);
  const bar = Math.max(1, slot - 2);
  const scale = (n) => (n / max) * (height - 3);
  const completed = points.reduce((sum, p) => sum + (p.completed ?? 0), 0);
  const failed = points.reduce((sum, p) => sum + (p.failed ?? 0), 0);
  return s(
    'svg',
    { class: 'spark', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'data-completed': completed, 'data-failed': failed },
    s('title', {}, `${completed} completed, ${failed} failed in the last ${points.length} minutes (peak ${max}/min)`),
    s('line', { x1: 0, y1: height - 0.5, x2: width, y2: height - 0.5, class: 'base' }),
    points.flatMap((p, i) => {
      const x = (i * slot + 1).toFixed(1);
      const ok = scale(p.completed ?? 0);
      const bad = scale(p.failed ?? 0);
      return [
        ok > 0 ? s('rect', { class: 'c', x, y: (height - 1 - ok).toFixed(1), width: bar.toFixed(1), height: ok.toFixed(1) }) : null,
        bad > 0 ? s('rect', { class: 'f', x, y: (height - 1 - ok - bad).toFixed(1), width: bar.toFixed(1), height: bad.toFixed(1) }) : null,
      ];
    }),
  );
}

/** Jobs list with filters (state, queue, task) and live progress bars. */
const jobsView = {
  title: 'Jobs',
  nav: 'jobs',
  mount(root, params) {
    this.filters = { state: params.get('state') ?? '', queue: params.get('queue') ?? '', task: params.get('task') ?? '' };
    this.limit = PAGE;
    const state = h('select', { name: 'state' }, h('option', { value: '' }, 'any'), STATES.map((st) => h('option', { value: st, selected: st === this.filters.state }, st)));
    state.value = this.filters.state;
    const queue = h('input', { name: 'queue', value: this.filters.queue, placeholder: 'any queue' });
    const task = h('input', { name: 'task', value: this.filters.task, placeholder: 'any task' });
    const apply = () => {
      const q = new URLSearchParams();
      if (state.value) q.set('state', state.value);
      if (queue.value.trim()) q.set('queue', queue.value.trim());
      if (task.value.trim()) q.set('task', task.value.trim());
      const query = q.toString();
      location.hash = `#/jobs${query ? `?${query}` : ''}`;
    };
    state.addEventListener('change', apply);
    const form = h(
      'form',
      { class: 'filters', id: 'job-filters', onsubmit: (e) => (e.preventDefault(), apply()) },
      h('label', {}, 'State', state),
      h('label', {}, 'Queue', queue),
      h('label', {}, 'Task', task),
      h('button', { type: 'submit' }, 'Filter'),
      h('a', { href: '#/jobs', class: 'btn' }, 'Clear'),
    );
    this.body = h('div');
    this.more = h('div', { class: 'more' });
    root.append(h('h1', {}, 'Jobs'), form, this.body, this.more);
  },
  async refresh() {
    const q = new URLSearchParams();
    for (const [key, value] of Object.entries(this.filters)) if (value) q.set(key, value);
    q.set('limit', String(this.limit));
    const data = await api(`api/jobs?${q}`);
    const jobs = listOf(data, 'items');
    if (!jobs.length) {
      this.body.replaceChildren(h('div', { class: 'panel empty' }, 'No jobs match.'));
      this.more.replaceChildren();
      return;
    }
    this.body.replaceChildren(
      h(
        'table',
        { id: 'jobs' },
        h('thead', {}, h('tr', {}, ['ID', 'Task', 'Queue', 'State', 'Progress', 'Attempt', 'Payload', 'Created', 'Finished', ''].map((t, i) => h('th', { class: i === 0 || i === 5 ? 'num' : undefined }, t)))),
        h(
          'tbody',
          {},
          jobs.map((job) =>
            h(
              'tr',
              { 'data-job-id': job.id, 'data-state': job.state },
              h('td', { class: 'num' }, h('a', { href: `#/jobs/${job.id}` }, `#${job.id}`)),
              h('td', {}, h('span', { class: 'clip mono' }, job.task)),
              h('td', {}, job.queue),
              h('td', {}, badge(viewOf(job))),
              h('td', {}, progressBar(job)),
              h('td', { class: 'num' }, `${job.attempt}/${job.maxAttempts}`),
              h('td', { 'data-payload': job.payloadPreview?.bytes }, previewText(job.payloadPreview)),
              h('td', {}, time(job.createdAt)),
              h('td', {}, job.finishedAt ? time(job.finishedAt) : viewOf(job) === 'delayed' ? h('span', { class: 'muted' }, `runs ${ago(job.runAt)}`) : '—'),
              h('td', {}, jobActions(job)),
            ),
          ),
        ),
      ),
    );
    const hasMore = Boolean(data && data.nextCursor);
    this.more.replaceChildren(
      h(
        'span',
        {},
        h('span', { class: 'muted' }, `${jobs.length} shown`),
        hasMore && this.limit < MAX_LIMIT ? [' ', h('button', { type: 'button', onclick: () => ((this.limit = Math.min(MAX_LIMIT, this.limit + PAGE)), refreshSoon()) }, 'Show more')] : null,
      ),
    );
  },
};

/**
 * One job: payload, result, progress, checkpoint, attempts' errors, timeline, steps, lease.
 * Live through its own stream (/api/events?job=ID): fetched once, then each `job` event
 * merges what changed into the page's copy, which is redrawn; nothing is re-fetched
 * while the stream is up. The stream ends when the job does (`end`); a finished job is
 * re-fetched after an action (retry) or by the slow timer, and followed again if it runs.
 */
const jobView = {
  title: 'Job',
  nav: 'jobs',
  /** Kept current by its own stream: the overview's `change` events do not re-fetch it. */
  ownEvents: true,
  mount(root, params) {
    this.id = params.get('id');
    this.body = h('div');
    this.job = null;
    this.steps = null;
    this.follow = null;
    root.append(this.body);
  },
  unmount() {
    this.follow?.abort();
    this.follow = null;
  },
  async refresh() {
    if (!this.job || !this.follow) {
      let job;
      try {
        job = await api(`api/jobs/${encodeURIComponent(this.id)}`);
      } catch (error) {
        if (error.status === 404) {
          this.job = null;
          this.body.replaceChildren(h('h1', {}, `Job #${this.id}`), h('div', { class: 'panel empty' }, error.message));
          return;
        }
        throw error;
      }
      this.job = job;
      if (!this.follow && !TERMINAL.includes(job.state)) this.followJob();
    }
    // The step log is read with each redraw the job's stream asks for (steps change as the job runs).
    this.steps = await api(`api/jobs/${encodeURIComponent(this.id)}/steps`).then((data) => data.steps, () => this.steps ?? []);
    this.render(this.job);
  },
  /** Opens the job's stream; its events update `this.job` and redraw. When it drops (not ended), the page re-fetches and follows again. */
  followJob() {
    const controller = new AbortController();
    this.follow = controller;
    let ended = false;
    const redraw = () => current === this && refreshSoon();
    readEvents(`api/events?job=${encodeURIComponent(this.id)}`, controller.signal, {
      onEvent: (event, data) => {
        if (event === 'job' && this.job && data) {
          Object.assign(this.job, data.job);
          if (data.timeline) this.job.timeline = data.timeline;
          redraw();
        } else if (event === 'end') {
          ended = true;
        }
      },
    })
      .catch(() => undefined)
      .finally(() => {
        if (this.follow !== controller) return;
        this.follow = null;
        // Ended (terminal, or deleted: the re-fetch shows it) or dropped: read it again.
        if (!controller.signal.aborted) setTimeout(redraw, ended ? 0 : 1000);
      });
  },
  /**
   * The job's action buttons, the same elements across redraws while what they depend on
   * is unchanged: a redraw for each event (progress, many a second) must not replace a
   * button under the pointer.
   */
  actionsFor(job) {
    const key = JSON.stringify([job.state, job.view, job.cancelRequestedAt, job.runAt]);
    if (this.actionsKey !== key) {
      this.actionsKey = key;
      this.actions = jobActions(job);
    }
    return this.actions;
  },
  render(job) {
    document.title = `Baton · job #${job.id}`;
    const view = viewOf(job);
    const errors = job.errors ?? [];
    const summary = [
      ['Task', h('span', { class: 'mono' }, job.task)],
      ['Queue', h('a', { href: `#/jobs?queue=${encodeURIComponent(job.queue)}` }, job.queue)],
      ['State', job.state],
      ['Priority', String(job.priority)],
      ['Attempt', `${job.attempt} of ${job.maxAttempts}`],
      ['Timeout', job.timeoutMs === null ? 'none' : duration(job.timeoutMs)],
      ['Key', job.key ?? '—'],
      // A waiting job with no deadline is due when what it waits for comes, not in the year 9999.
      ['Run at', job.wait && job.runAt >= NEVER_ISO ? h('span', { class: 'muted' }, 'when what it waits for comes') : time(job.runAt)],
      ...(job.wait ? [['Waits for', waitsFor(job.wait)]] : []),
      ...(job.parentId ? [['Parent', h('span', { id: 'job-parent' }, ...jobLinks([job.parentId]))]] : []),
      ['Lease holder', job.leaseOwner ? h('span', { class: 'mono', id: 'job-lease' }, job.leaseOwner) : '—'],
      ['Lease expires', time(job.leaseExpiresAt)],
      ['Cancel requested', time(job.cancelRequestedAt)],
      ['Cancel reason', job.cancelReason ?? '—'],
      ['Schedule', job.scheduleName ? h('span', {}, job.scheduleName, job.scheduledFor ? h('span', { class: 'muted' }, ` tick ${formatTime(job.scheduledFor)}`) : null) : '—'],
    ];
    // The stored story (GET /api/jobs/:id → timeline, oldest first): releases, rescues, snoozes, cancels and who asked.
    const kinds = { completed: 'good', failed: 'bad', cancelled: 'bad', cancelRequested: 'bad', rescued: 'bad', retryScheduled: 'bad' };
    const timeline = job.timeline;
    const runningFor = job.startedAt && !job.finishedAt && job.state === 'running' ? ` · running ${duration(Date.now() - new Date(job.startedAt).getTime())}` : '';
    const took = job.startedAt && job.finishedAt ? ` · last attempt took ${duration(new Date(job.finishedAt) - new Date(job.startedAt))}` : '';

    this.body.replaceChildren(
      h('h1', {}, h('a', { href: '#/jobs' }, 'Jobs'), ' / ', `#${job.id}`, h('span', { class: 'mono' }, job.task), h('span', { id: 'job-state', 'data-state': job.state }, badge(view)), this.actionsFor(job)),
      h('div', { class: 'panel' }, h('h2', { style: undefined }, 'Progress'), progressBar(job, true), h('span', { class: 'muted' }, runningFor || took)),
      h(
        'div',
        { class: 'grid2' },
        h('div', { class: 'panel' }, h('h2', {}, 'Summary'), h('dl', { class: 'kv' }, summary.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]))),
        h('div', { class: 'panel' }, h('h2', {}, 'Timeline'), h('ul', { class: 'timeline', id: 'job-timeline' }, timeline.map((t) => h('li', { class: kinds[t.type], 'data-type': t.type }, h('span', { title: t.at }, formatTime(t.at)), ' — ', t.summary)))),
      ),
      ...((this.steps ?? []).length ? [stepsPanel(this.steps)] : []),
      h(
        'div',
        { class: 'grid2' },
        h('div', { class: 'panel' }, h('h2', {}, 'Payload'), valueBlock(job, 'payload')),
        h('div', { class: 'panel' }, h('h2', {}, 'Result'), valueBlock(job, 'result'), h('h2', {}, 'Checkpoint'), valueBlock(job, 'checkpoint')),
      ),
      h(
        'div',
        { class: 'panel', id: 'job-errors' },
        h('h2', {}, `Errors (${errors.length})`),
        errors.length
          ? errors.map((e) =>
              h(
                'div',
                { class: 'attempt-error', 'data-attempt': e.attempt },
                h('div', {}, h('strong', {}, `Attempt ${e.attempt}`), h('span', { class: 'muted' }, ` · ${formatTime(e.time)}`)),
                h('div', { class: 'msg' }, e.message),
                e.stack ? h('pre', {}, e.stack) : null,
              ),
            )
          : h('div', { class: 'muted' }, 'No failed attempts.'),
      ),
    );
  },
};

/** Schedules and services, with pause / resume / trigger. */
const schedulesView = {
  title: 'Schedules & services',
  nav: 'schedules',
  mount(root) {
    this.schedules = h('div');
    this.services = h('div');
    root.append(h('h1', {}, 'Schedules'), this.schedules, h('h1', { class: 'section' }, 'Services'), this.services);
  },
  async refresh() {
    const [schedules, services] = await Promise.all([api('api/schedules').then((d) => listOf(d, 'schedules')), api('api/services').then((d) => listOf(d, 'services'))]);
    const admin = (kind, item) =>
      h(
        'span',
        { class: 'actions' },
        item.paused
          ? actionButton('Resume', `api/${kind}/${encodeURIComponent(item.name)}/resume`, { action: 'resume', done: `${item.name} resumed` })
          : actionButton('Pause', `api/${kind}/${encodeURIComponent(item.name)}/pause`, { action: 'pause', done: `${item.name} paused` }),
        actionButton('Trigger', `api/${kind}/${encodeURIComponent(item.name)}/trigger`, { kind: 'primary', action: 'trigger', done: `${item.name} triggered` }),
      );
    const status = (item) => (item.paused ? badge('paused') : badge('active'));
    this.schedules.replaceChildren(
      schedules.length
        ? h(
            'table',
            { id: 'schedules' },
            h('thead', {}, h('tr', {}, ['Name', 'Cadence', 'Task', 'Queue', 'Status', 'Next run', 'Last run', 'Last worker', ''].map((t) => h('th', {}, t)))),
            h(
              'tbody',
              {},
              schedules.map((sc) =>
                h(
                  'tr',
                  { 'data-schedule': sc.name },
                  h('td', {}, h('strong', {}, sc.name)),
                  h('td', { class: 'mono' }, sc.cadence ?? sc.cron ?? (sc.every ? `every ${duration(sc.every)}` : '—')),
                  h('td', {}, h('a', { href: `#/jobs?task=${encodeURIComponent(sc.task)}` }, sc.task)),
                  h('td', {}, sc.queue),
                  h('td', {}, status(sc)),
                  h('td', {}, time(sc.nextRunAt)),
                  h('td', {}, time(sc.lastRunAt)),
                  h('td', { class: 'mono' }, sc.lastWorker ?? '—'),
                  h('td', {}, admin('schedules', sc)),
                ),
              ),
            ),
          )
        : h('div', { class: 'panel empty' }, 'No schedules.'),
    );
    this.services.replaceChildren(
      services.length
        ? h(
            'table',
            { id: 'services' },
            h('thead', {}, h('tr', {}, ['Name', 'Status', 'Held by', 'Last run', 'Next run', 'Failures', 'Last error', ''].map((t) => h('th', {}, t)))),
            h(
              'tbody',
              {},
              services.map((sv) =>
                h(
                  'tr',
                  { 'data-service': sv.name },
                  h('td', {}, h('strong', {}, sv.name)),
                  h('td', {}, status(sv)),
                  h('td', { class: 'mono' }, sv.holder ? [sv.holder, h('span', { class: 'muted' }, ` until ${formatTime(sv.holderUntil)}`)] : '—'),
                  h('td', {}, time(sv.lastRunAt)),
                  h('td', {}, sv.nextRunAt ? time(sv.nextRunAt) : h('span', { class: 'muted' }, 'when triggered')),
                  h('td', { class: 'num' }, String(sv.failures ?? 0)),
                  h('td', {}, sv.lastError ? h('span', { class: 'clip', title: sv.lastError }, sv.lastError) : '—'),
                  h('td', {}, admin('services', sv)),
                ),
              ),
            ),
          )
        : h('div', { class: 'panel empty' }, 'No services.'),
    );
  },
};

/** Live worker processes from the registry. */
const workersView = {
  title: 'Workers',
  nav: 'workers',
  mount(root) {
    this.body = h('div');
    root.append(h('h1', {}, 'Workers'), this.body);
  },
  async refresh() {
    const workers = listOf(await api('api/workers'), 'workers');
    this.body.replaceChildren(
      workers.length
        ? h(
            'table',
            { id: 'workers' },
            h('thead', {}, h('tr', {}, ['Worker', 'Host', 'PID', 'Started', 'Last heartbeat', 'Concurrency', 'Queues', 'Tasks', 'Running jobs'].map((t) => h('th', {}, t)))),
            h(
              'tbody',
              {},
              workers.map((w) =>
                h(
                  'tr',
                  { 'data-worker': w.id },
                  h('td', { class: 'mono' }, w.id),
                  h('td', {}, w.host),
                  h('td', { class: 'num' }, String(w.pid)),
                  h('td', {}, time(w.startedAt)),
                  h('td', {}, time(w.lastHeartbeatAt)),
                  h('td', { class: 'num' }, `${(w.running ?? []).length} / ${w.concurrency}`),
                  h('td', {}, (w.queues ?? []).join(', ')),
                  h('td', { class: 'mono' }, w.tasks ? w.tasks.join(', ') : h('span', { class: 'muted' }, 'not recorded')),
                  h('td', {}, (w.running ?? []).length ? (w.running ?? []).flatMap((id, i) => [i ? ', ' : null, h('a', { href: `#/jobs/${id}` }, `#${id}`)]) : h('span', { class: 'muted' }, 'idle')),
                ),
              ),
            ),
          )
        : h('div', { class: 'panel empty' }, 'No live workers.'),
    );
  },
};

// ---------------------------------------------------------------- router and refresh

let current = null; // { view, key }
let refreshing = false;
let pending = false;

function route() {
  const hash = location.hash.replace(/^#/, '') || '/queues';
  const [path, query = ''] = hash.split('?');
  const params = new URLSearchParams(query);
  const parts = path.split('/').filter(Boolean);
  if (parts[0] === 'jobs' && parts[1]) {
    params.set('id', parts[1]);
    return { view: jobView, params };
  }
  const views = { queues: queuesView, jobs: jobsView, schedules: schedulesView, workers: workersView };
  return { view: views[parts[0]] ?? queuesView, params };
}

function show() {
  current?.unmount?.();
  const { view, params } = route();
  const main = document.getElementById('view');
  main.replaceChildren();
  main.removeAttribute('data-ready');
  main.setAttribute('data-view', view === jobView ? 'job' : view.nav);
  for (const a of document.querySelectorAll('[data-nav]')) a.classList.toggle('active', a.dataset.nav === view.nav);
  document.title = `Baton · ${view.title}`;
  const instance = Object.create(view);
  instance.mount(main, params);
  current = instance;
  refreshSoon();
}

/** Re-fetches the visible view; calls while one is in flight fold into one more. */
async function refreshSoon() {
  if (refreshing) {
    pending = true;
    return;
  }
  refreshing = true;
  try {
    do {
      pending = false;
      const view = current;
      try {
        await view.refresh();
        if (view === current) document.getElementById('view').setAttribute('data-ready', String(Date.now()));
      } catch (error) {
        if (view === current) flash(error.message);
      }
    } while (pending);
  } finally {
    refreshing = false;
  }
}

// ---------------------------------------------------------------- live updates

let eventsAbort = null;
let live = false;

function setLive(on) {
  live = on;
  const el = document.getElementById('live');
  el.textContent = on ? 'live' : 'offline';
  el.className = on ? 'live on' : 'live off';
}

/**
 * Reads the Server-Sent Events at `path` with fetch (EventSource cannot send
 * Authorization) until the server ends the stream: `onOpen()` once connected,
 * `onEvent(event, data)` for each event (`data` parsed as JSON, null when it is not).
 * Rejects when it cannot connect, the stream drops, or `signal` aborts.
 */
async function readEvents(path, signal, { onOpen, onEvent }) {
  const res = await fetch(apiUrl(path), { headers: headers({ Accept: 'text/event-stream' }), cache: 'no-store', signal });
  if (!res.ok || !res.body) throw new Error(`${path}: ${res.status}`);
  onOpen?.();
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer = (buffer + value).replace(/\r\n/g, '\n');
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const parsed = parseEvent(block);
      if (parsed) onEvent(parsed.event, parsed.data);
    }
  }
}

/** One event block → { event, data }; null for a comment alone (a heartbeat). */
function parseEvent(block) {
  let event = 'message';
  const data = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue; // heartbeat comment
    if (line.startsWith('event:')) event = line.slice(6).trim();
    else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
  }
  if (data.length === 0) return null;
  try {
    return { event, data: JSON.parse(data.join('\n')) };
  } catch {
    return { event, data: null };
  }
}

/** Reads /api/events; reconnects with backoff. Each `change` re-fetches the visible view (unless it follows its own stream). */
async function connectEvents() {
  eventsAbort?.abort();
  const controller = new AbortController();
  eventsAbort = controller;
  let backoff = 500;
  while (!controller.signal.aborted) {
    try {
      await readEvents('api/events', controller.signal, {
        onOpen: () => {
          setLive(true);
          backoff = 500;
        },
        onEvent: (event) => {
          if (event === 'change' && !current?.ownEvents) refreshSoon();
        },
      });
    } catch {
      // Dropped, refused or aborted: poll until the stream is back.
    }
    if (eventsAbort === controller) setLive(false);
    if (controller.signal.aborted) return;
    await new Promise((resolve) => setTimeout(resolve, backoff));
    backoff = Math.min(backoff * 2, 10_000);
  }
}

// ---------------------------------------------------------------- token

function setupToken() {
  const form = document.getElementById('token-form');
  const input = document.getElementById('token-input');
  const describe = () => (input.placeholder = token() ? 'token saved (this tab)' : 'bearer token (optional)');
  describe();
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const value = input.value.trim();
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    else sessionStorage.removeItem(TOKEN_KEY);
    input.value = '';
    describe();
    flash(value ? 'Token saved for this tab' : 'Token cleared', true);
    connectEvents();
    refreshSoon();
  });
}

// ---------------------------------------------------------------- start

setupToken();
window.addEventListener('hashchange', show);
show();
connectEvents();
setInterval(() => {
  if (!live && document.visibilityState === 'visible') refreshSoon();
}, POLL_MS);
// Relative times ("3s ago") and running durations age even without changes.
setInterval(() => {
  if (live && document.visibilityState === 'visible') refreshSoon();
}, 15_000);
