// The COPS web page (docs/api.md, "The web page"): a client of the /v1 API in the browser.
// Everything it shows goes through textContent or DOM properties, never through HTML
// parsing, and it needs no inline script or style (the page's Content-Security-Policy
// forbids both). The report it draws from a job's result is the one of `cops check --html`
// (client/html_report.cc): the same best-source allocation, colours and sections.
'use strict';

const KEY_STORAGE = 'cops.apiKey';
const POLL_MS = 400;
// Jobs the page keeps submitted at once; more files wait in the page's own line. copsd keeps
// at most --http-max-queued-jobs-per-caller (16) of a caller's jobs waiting.
const MAX_JOBS_IN_FLIGHT = 4;
// Submissions the server refused as busy (429, 503) are tried again this many times, each
// after Retry-After (at least 1 s), doubled from one to the next up to 16 s.
const BUSY_ATTEMPTS = 8;
// client/html_report.cc: kMaxCellBytes (longer side-by-side passages keep their two ends).
const MAX_CELL_BYTES = 4000;
// Formats whose registered offsets are bytes of the registered file (RegisteredTextFrom).
const READABLE_FORMATS = new Set(['text', 'html', 'latex', 'markdown']);
// The number of colours of app.css (.src-0 ... .src-11), as SourceColour() cycles them.
const COLOURS = 12;
const FORMAT_OF_EXTENSION = {
  pdf: 'pdf', docx: 'docx', odt: 'odt', html: 'html', htm: 'html', xhtml: 'html',
  tex: 'latex', latex: 'latex', md: 'markdown', markdown: 'markdown', txt: 'text',
  text: 'text', eml: 'email',
};
const EXCLUSION_LABELS = {
  quote: 'quoted', references: 'in the references', template: 'shared with a template',
  short_match: 'shorter than the minimum match',
};

const session = { key: sessionStorage.getItem(KEY_STORAGE) || '', authRequired: true,
                  mayRegister: false, principal: '', byCertificate: false,
                  defaultsShown: false };
let documentCount = 0;
const registeredTexts = new Map();  // doc id -> Promise of Uint8Array or null

// ------------------------------------------------------------------ small helpers

function $(id) { return document.getElementById(id); }

// An element with properties (className, textContent, id, href, ...) and children (nodes or
// strings, which become text).
function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (name === 'role' || name.startsWith('aria-') || name.startsWith('data-')) {
      node.setAttribute(name, value);
    } else {
      node[name] = value;
    }
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return node;
}

function say(text) { $('status').textContent = text; }

function percent(share) { return (100 * share).toFixed(1) + '%'; }

const decoder = new TextDecoder('utf-8');  // invalid sequences become U+FFFD
function decode(bytes, start, end) {
  start = Math.min(start, bytes.length);
  end = Math.min(Math.max(end, start), bytes.length);
  return decoder.decode(bytes.subarray(start, end));
}

// bytes[start, end) as text, cut in the middle past MAX_CELL_BYTES.
function cellText(bytes, start, end) {
  start = Math.min(start, bytes.length);
  end = Math.min(Math.max(end, start), bytes.length);
  if (end - start <= MAX_CELL_BYTES) return [decode(bytes, start, end)];
  return [decode(bytes, start, start + MAX_CELL_BYTES / 2),
          el('span', { className: 'muted', textContent: ' [...] ' }),
          decode(bytes, end - MAX_CELL_BYTES / 2, end)];
}

// A call of the API: {status, body (parsed JSON or null), error (message)}.
async function api(method, path, body, contentType) {
  const headers = {};
  if (session.key) headers.Authorization = 'Bearer ' + session.key;
  if (contentType) headers['Content-Type'] = contentType;
  let response;
  try {
    response = await fetch(path, { method, headers, body, cache: 'no-store' });
  } catch (e) {
    return { status: 0, body: null, error: 'the server cannot be reached (' + e.message + ')' };
  }
  const text = await response.text();
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch (e) { parsed = null; }
  const error = response.ok ? '' : errorText(parsed, response.status);
  return { status: response.status, body: parsed, error };
}

function errorText(body, status) {
  if (body && body.message) return (body.code ? body.code + ': ' : '') + body.message;
  return 'HTTP ' + status;
}

// ------------------------------------------------------------------ signing in

async function refreshSession() {
  const reply = await api('GET', '/v1/session');
  if (reply.status === 200) {
    session.authRequired = reply.body.auth_required;
    session.mayRegister = reply.body.may_register;
    session.principal = reply.body.principal || '';
    // Under mutual TLS the client certificate may name the principal: no key is asked.
    session.byCertificate = reply.body.credential === 'certificate';
    // The boxes start as the server decides a check that does not say; the page then sends
    // what they show.
    if (!session.defaultsShown) {
      session.defaultsShown = true;
      $('check-heavy').checked = Boolean((reply.body.check_defaults || {}).heavy_revisions);
    }
    showWorkspace();
    return '';
  }
  if (reply.status === 401) {
    const hadKey = Boolean(session.key);
    forgetKey();
    showSignIn(hadKey ? 'The key was not accepted: ' + reply.error : '');
    return reply.error;
  }
  showSignIn('The server did not answer as expected: ' + reply.error);
  return reply.error;
}

function forgetKey() {
  session.key = '';
  sessionStorage.removeItem(KEY_STORAGE);
}

function showSignIn(error) {
  $('workspace').hidden = true;
  $('owner').hidden = true;
  $('account').hidden = true;
  $('sign-in').hidden = false;
  $('sign-in-error').textContent = error;
  $('api-key').focus();
}

function showWorkspace() {
  const wasHidden = $('workspace').hidden;
  $('sign-in').hidden = true;
  $('workspace').hidden = false;
  $('owner').hidden = !session.mayRegister;
  $('account').hidden = false;
  // A certificate cannot be signed out of from the page (the browser presents it).
  $('sign-out').hidden = !session.authRequired || session.byCertificate;
  const who = session.principal ? ' as ' + session.principal : '';
  const how = session.byCertificate ? ' with a client certificate' : '';
  $('account-text').textContent = session.authRequired
      ? 'Signed in' + who + how +
        (session.mayRegister ? ' (may register documents)' : ' (checks only)')
      : 'Authentication is off on this server';
  if (wasHidden && session.authRequired) $('check-files').focus();
}

async function signIn(event) {
  event.preventDefault();
  const key = $('api-key').value.trim();
  if (!key) return;
  session.key = key;
  $('sign-in-error').textContent = '';
  say('Signing in...');
  const error = await refreshSession();
  if (!error) {
    sessionStorage.setItem(KEY_STORAGE, key);
    $('api-key').value = '';
    say('Signed in.');
  } else {
    $('api-key').value = '';
    say('');
  }
}

function signOut() {
  forgetKey();
  registeredTexts.clear();
  $('documents').replaceChildren();
  $('documents-empty').hidden = false;
  $('matches-result').replaceChildren();
  $('register-result').textContent = '';
  say('Signed out.');
  showSignIn('');
  // Where a client certificate names a principal, the page is signed in with it again.
  refreshSession();
}

// ------------------------------------------------------------------ checking

function formatOf(name) {
  const dot = name.lastIndexOf('.');
  return dot < 0 ? '' : (FORMAT_OF_EXTENSION[name.slice(dot + 1).toLowerCase()] || '');
}

function collections() {
  return $('check-collections').value.split(',').map((c) => c.trim()).filter((c) => c);
}

async function submitChecks(event) {
  event.preventDefault();
  const files = Array.from($('check-files').files);
  const pasted = $('paste-text').value;
  if (files.length === 0 && !pasted.trim()) {
    say('Choose or drop a file, or paste some text, to check.');
    $('check-files').focus();
    return;
  }
  if ($('check-batch').checked && files.length > 1) checkBatch(files);
  else for (const file of files) checkFile(file, file.name);
  if (pasted.trim()) {
    const name = $('paste-title').value.trim() || 'pasted text';
    checkFile(new File([pasted], name, { type: 'text/plain' }), name, 'text');
    $('paste-text').value = '';
  }
  $('check-files').value = '';
}

// One document of the list: its name, state, progress and, when done, its report.
function addDocumentItem(name) {
  const n = ++documentCount;
  const heading = el('h3', { id: 'doc-' + n + '-name', textContent: name });
  const stateText = el('span', { className: 'state', textContent: 'uploading' });
  const progress = el('progress', { max: 100, value: 0, 'aria-labelledby': 'doc-' + n + '-name' });
  const detail = el('div', { className: 'detail' });
  const item = el('li', { className: 'document', id: 'doc-' + n, 'data-state': 'uploading' },
                  heading, el('p', {}, 'State: ', stateText, ' ', progress), detail);
  $('documents-empty').hidden = true;
  $('documents').append(item);
  const set = (state, text) => {
    item.setAttribute('data-state', state);
    stateText.textContent = text || state;
  };
  return { n, item, progress, detail, set };
}

async function checkFile(file, name, format) {
  const view = addDocumentItem(name);
  format = format || formatOf(name);
  const form = new FormData();
  form.append('file', file, name);
  form.append('title', name);
  if (format) form.append('format', format);
  for (const c of collections()) form.append('collection', c);
  form.append('heavy_revisions', String($('check-heavy').checked));
  const bytesPromise = file.arrayBuffer().then((b) => new Uint8Array(b));
  const result = await runJob(view, form);
  if (!result) return;
  view.set('done', result.violation ? 'done: VIOLATION' : 'done: no violation');
  const report = await renderReport(view.n, name, await bytesPromise, result);
  view.detail.replaceChildren(el('details', { open: true },
                                 el('summary', {}, 'Report of ' + name), report));
  say(name + ': checked, ' + (result.violation ? 'violation' : 'no violation') + '.');
}

// Submits `form` as a job once the page's line reaches it and follows it in `view`: its
// result, or null once the failure is shown.
async function runJob(view, form) {
  if (jobSlots.free === 0) view.set('waiting', 'waiting: documents before it go first');
  await takeJobSlot();
  try {
    return await jobResult(view, await submitJob(view, form));
  } catch (error) {
    return fail(view, error.message);
  } finally {
    releaseJobSlot();
  }
}

// Follows the job of `submitted` (the reply to its POST) in `view` until it ends: its result,
// or null once the failure is shown.
async function jobResult(view, submitted) {
  if (submitted.status !== 202) return fail(view, submitted.error);
  view.progress.removeAttribute('value');  // indeterminate while queued and running
  for (;;) {
    const reply = await api('GET', '/v1/jobs/' + encodeURIComponent(submitted.body.id));
    if (reply.status !== 200) return fail(view, reply.error);
    const state = reply.body.state;
    if (state === 'queued') view.set('queued', 'queued: waiting for a worker');
    if (state === 'running') view.set('running', 'running: converting and checking');
    if (state === 'failed') return fail(view, errorText(reply.body.error, 500));
    if (state === 'done') {
      view.progress.value = 100;
      return reply.body.result;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

// Several files as one batch job: the result of `cops compare` (the files compared with
// each other, then each checked against the registered documents), shown in one item.
async function checkBatch(files) {
  const name = 'Batch of ' + files.length + ': ' + files.map((f) => f.name).join(', ');
  const view = addDocumentItem(name);
  const form = new FormData();
  for (const file of files) form.append('file', file, file.name);
  for (const c of collections()) form.append('collection', c);
  form.append('heavy_revisions', String($('check-heavy').checked));
  const bytes = Promise.all(files.map((f) => f.arrayBuffer().then((b) => new Uint8Array(b))));
  const result = await runJob(view, form);
  if (!result) return;
  const shared = (result.pairs || []).length;
  const violations = (result.corpus || []).filter((c) => c.violation).length;
  view.set('done', 'done: ' + shared + ' pair(s) sharing text, ' + violations +
           ' VIOLATION(s) against the registered documents');
  const report = await renderBatch(view.n, files, await bytes, result);
  view.detail.replaceChildren(el('details', { open: true },
                                 el('summary', {}, 'Report of the batch'), report));
  say('Batch checked: ' + shared + ' pair(s) share text.');
}

// The `cops --json compare` object: the documents, the pairs sharing passages, the groups,
// then each document's report against the registered documents (folded).
async function renderBatch(n, files, bytes, r) {
  const section = el('section', { className: 'batch', id: 'doc-' + n + '-report',
                                  'aria-label': 'Report of the batch' });
  const docs = table('batch-documents', ['document', 'format', 'words']);
  for (const d of r.documents || []) {
    docs.tBodies[0].append(el('tr', {}, el('td', {}, d.path),
        d.error ? el('td', { className: 'error', colSpan: 2 }, 'could not be read: ' + d.error)
                : el('td', {}, d.format || ''),
        ...(d.error ? [] : [el('td', { className: 'num' }, String(d.words))])));
  }
  section.append(el('h4', { textContent: 'Documents' }), docs,
                 el('h4', { textContent: 'Shared passages between them' }));
  const pairs = r.pairs || [];
  if (pairs.length) {
    const list = table('pairs', ['document', 'other document', 'share of the first in the other',
                                 'share of the other in the first', 'passages']);
    for (const p of pairs) {
      list.tBodies[0].append(el('tr', {}, el('td', {}, p.a), el('td', {}, p.b),
          el('td', { className: 'num' }, percent(p.a_in_b)),
          el('td', { className: 'num' }, percent(p.b_in_a)),
          el('td', { className: 'num' }, String((p.passages || []).length))));
    }
    section.append(list);
  } else {
    section.append(el('p', { className: 'muted' }, 'No two of these documents share a passage.'));
  }
  const clusters = (r.clusters || []).filter((c) => c.length > 1);
  if (clusters.length) {
    section.append(el('h4', { textContent: 'Groups sharing text' }),
                   el('ul', { className: 'clusters' },
                      ...clusters.map((c) => el('li', {}, c.join(', ')))));
  }
  section.append(el('h4', { textContent: 'Each document against the registered documents' }));
  const corpus = r.corpus || [];
  for (let i = 0; i < corpus.length; ++i) {
    const c = corpus[i];
    const docName = c.path || files[i].name;
    if (c.error) {
      section.append(el('p', { className: 'error' }, docName + ': could not be checked: ' +
                        c.error));
      continue;
    }
    const report = await renderReport(n + '-' + i, docName, bytes[i], c);
    section.append(el('details', { className: 'batch-report' },
        el('summary', {}, docName + ': ' + (c.violation ? 'VIOLATION' : 'no violation')), report));
  }
  return section;
}

function fail(view, message) {
  view.set('failed', 'failed');
  view.progress.value = 0;
  view.detail.replaceChildren(el('p', { className: 'error', role: 'alert' },
                                 'Could not be checked: ' + message));
  say('A document could not be checked.');
}

// POST of a form with upload progress (fetch cannot report it): {status, body, error}.
function upload(path, form, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', path);
    if (session.key) xhr.setRequestHeader('Authorization', 'Bearer ' + session.key);
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) onProgress(e.loaded / e.total); };
    xhr.onerror = () => reject(new Error('the upload failed (the server cannot be reached)'));
    xhr.onload = () => {
      let body = null;
      try { body = JSON.parse(xhr.responseText); } catch (e) { body = null; }
      const ok = xhr.status >= 200 && xhr.status < 300;
      resolve({ status: xhr.status, body, error: ok ? '' : errorText(body, xhr.status),
                retryAfter: Number(xhr.getResponseHeader('Retry-After')) || 1 });
    };
    xhr.send(form);
  });
}

// The page's line of jobs: a job takes a slot before it is uploaded and gives it back when
// it has ended, so that at most MAX_JOBS_IN_FLIGHT are submitted at once.
const jobSlots = { free: MAX_JOBS_IN_FLIGHT, waiting: [] };

function takeJobSlot() {
  if (jobSlots.free > 0) {
    jobSlots.free--;
    return Promise.resolve();
  }
  return new Promise((resolve) => jobSlots.waiting.push(resolve));
}

function releaseJobSlot() {
  const next = jobSlots.waiting.shift();
  if (next) next();
  else jobSlots.free++;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// POST /v1/jobs of `form` for `view`, tried again while the server is busy: the reply.
async function submitJob(view, form) {
  let delayMs = 1000;
  for (let attempt = 1; ; attempt++) {
    const job = await upload('/v1/jobs', form, (fraction) => {
      view.progress.value = Math.round(100 * fraction);
      view.set('uploading', 'uploading, ' + Math.round(100 * fraction) + '%');
    });
    if ((job.status !== 429 && job.status !== 503) || attempt === BUSY_ATTEMPTS) return job;
    delayMs = Math.min(16000, Math.max(delayMs, 1000 * job.retryAfter));
    view.set('waiting', 'waiting: the server is busy (' + job.error + '); trying again in ' +
             Math.round(delayMs / 1000) + ' s');
    await sleep(delayMs);
    delayMs *= 2;
  }
}

// ------------------------------------------------------------------ the report

// Byte ranges of a text, each given to the first label that claims it (html_report.cc's
// Painter): labels are source indices, or strings for excluded parts.
class Painter {
  constructor() { this.taken = []; }  // sorted, disjoint {start, end, label}
  paint(start, end, label, size) {
    start = Math.min(start, size);
    end = Math.min(Math.max(end, start), size);
    let at = start;
    const added = [];
    for (const r of this.taken) {
      if (r.end <= at) continue;
      if (r.start >= end) break;
      if (r.start > at) added.push({ start: at, end: r.start, label });
      at = Math.max(at, r.end);
      if (at >= end) break;
    }
    if (at < end) added.push({ start: at, end, label });
    this.taken.push(...added);
    this.taken.sort((a, b) => a.start - b.start);
  }
  ranges() {
    const out = [];
    for (const r of this.taken) {
      const last = out[out.length - 1];
      if (last && last.end === r.start && last.label === r.label) last.end = r.end;
      else out.push({ ...r });
    }
    return out;
  }
}

function sourceName(m) {
  let name = '#' + m.doc_id;
  if (m.title) name += ' "' + m.title + '"';
  if (m.collection) name += ' in ' + m.collection;
  if (m.owner) name += ', owner ' + m.owner;
  return name;
}

function swatch(i) {
  return el('span', { className: 'swatch src-' + (i % COLOURS), 'aria-hidden': 'true' });
}

function exclusionLabel(reason) { return EXCLUSION_LABELS[reason] || reason; }

function exclusionsText(p) {
  const parts = [];
  if (p.exclude_quotes) parts.push('quotes');
  if (p.exclude_references) parts.push('references');
  if (p.min_match_units > 0) parts.push('matches under ' + p.min_match_units + ' words');
  if (p.template_collections && p.template_collections.length) {
    parts.push('templates (' + p.template_collections.join(' ') + ')');
  }
  return parts.length ? parts.join(', ') : 'none';
}

// The registered text of a source for the side-by-side view, or null (offsets only).
function registeredText(docId) {
  if (!registeredTexts.has(docId)) {
    registeredTexts.set(docId, (async () => {
      const info = await api('GET', '/v1/documents/' + docId);
      if (info.status !== 200 || !READABLE_FORMATS.has(info.body.format)) return null;
      const headers = session.key ? { Authorization: 'Bearer ' + session.key } : {};
      try {
        const response = await fetch('/v1/documents/' + docId + '/content',
                                     { headers, cache: 'no-store' });
        return response.ok ? new Uint8Array(await response.arrayBuffer()) : null;
      } catch (e) {
        return null;
      }
    })());
  }
  return registeredTexts.get(docId);
}

function table(className, headings) {
  const head = el('tr', {}, ...headings.map((h) => el('th', { scope: 'col' }, h)));
  return el('table', { className }, el('thead', {}, head), el('tbody'));
}

async function renderReport(n, name, bytes, r) {
  const anchor = 'doc-' + n + '-report';
  const extracted = r.offsets_in_extracted_text;
  const matches = r.matches || [];
  const excluded = r.excluded || [];
  let excludedBytes = 0;
  for (const e of excluded) {
    const start = Math.min(e.test_start, bytes.length);
    excludedBytes += Math.min(Math.max(e.test_end, start), bytes.length) - start;
  }
  const counted = bytes.length - excludedBytes;
  const allocated = matches.map(() => 0);
  let overall = 0;
  let ranges = [];
  if (!extracted && counted > 0) {
    const taken = new Painter();
    matches.forEach((m, i) => {
      for (const s of m.spans || []) {
        // A heavy revision's 3-word runs are evidence, not passages: they count for nothing.
        if (s.excluded || s.revision_run) continue;
        taken.paint(s.test_start, s.test_end, i, bytes.length);
      }
    });
    ranges = taken.ranges();
    for (const range of ranges) {
      const share = (range.end - range.start) / counted;
      allocated[range.label] += share;
      overall += share;
    }
  } else if (extracted) {
    for (const m of matches) overall = Math.max(overall, m.ratio);
  }

  const section = el('section', { className: 'report', id: anchor,
                                  'aria-label': 'Report of ' + name });
  const verdict = r.violation ? el('strong', { className: 'violation', textContent: 'VIOLATION' })
                              : el('strong', { className: 'ok', textContent: 'no violation' });
  section.append(el('p', { className: 'summary' }, verdict, ' · similarity ',
      el('span', { className: 'figure', textContent: percent(overall) }), ' ',
      extracted ? "(the best source's share of the text)"
                : 'of the text is inside matched passages, each counted once',
      excluded.length ? ' (of the text not excluded)' : '',
      ' · ' + matches.length + ' source(s) · format ' + r.format));

  if (matches.length) {
    section.append(el('h4', { textContent: 'Sources' }));
    const sources = table('sources', ['colour', 'source', 'counted for it',
                                      'share of this text found in it',
                                      'share of it found here', 'decision']);
    matches.forEach((m, i) => {
      const decision = m.template ? el('span', { className: 'muted' }, 'template: never counts')
          : m.violation && (m.decided_by || []).includes('heavy_revision') &&
                !(m.decided_by || []).includes('chunks')
            ? el('span', { className: 'violation' },
                 'violation: heavy revision (' + m.revision_grams + ' 3-word runs in order)')
          : m.violation ? el('span', { className: 'violation' }, 'violation') : 'below';
      sources.tBodies[0].append(el('tr', {},
          el('td', {}, swatch(i)),
          el('td', {}, el('a', { href: '#' + anchor + '-src-' + i, textContent: sourceName(m) })),
          el('td', { className: 'num' }, extracted ? '–' : percent(allocated[i])),
          el('td', { className: 'num' }, percent(m.ratio)),
          el('td', { className: 'num' }, percent(m.containment)),
          el('td', {}, decision)));
    });
    section.append(sources);
  }

  if (excluded.length) {
    section.append(el('h4', { textContent: 'Excluded' }),
                   el('p', { className: 'muted' }, 'These parts of the text do not count: ' +
                      'matches inside them are shown struck through and are not in the figures.'));
    const list = table('excluded', ['why', 'where', 'text']);
    for (const e of excluded) {
      list.tBodies[0].append(el('tr', { 'data-excluded': e.reason },
          el('td', {}, exclusionLabel(e.reason)),
          el('td', {}, (extracted ? 'text ' : 'bytes ') + e.test_start + '-' + e.test_end),
          el('td', { className: 'passage' },
             ...(extracted ? [] : cellText(bytes, e.test_start,
                                           Math.min(e.test_end, e.test_start + 300))))));
    }
    section.append(list);
  }

  if (!extracted) {
    section.append(el('h4', { textContent: 'Text' }), textView(bytes, r, matches, ranges));
  }

  const texts = await Promise.all(matches.map((m) => (
    (m.spans || []).some((s) => 'registered_start' in s) ? registeredText(m.doc_id) : null)));
  matches.forEach((m, i) => {
    section.append(el('h4', { id: anchor + '-src-' + i }, swatch(i), ' ' + sourceName(m)));
    const sbs = table('sbs', ['this document', sourceName(m)]);
    for (const s of m.spans || []) {
      let where = s.test_first_page ? 'page ' + s.test_first_page + ', ' : '';
      where += (extracted ? 'text ' : 'bytes ') + s.test_start + '-' + s.test_end;
      if (s.excluded) where += ' · excluded: ' + exclusionLabel(s.excluded);
      if (s.revision_run) where += ' · a run kept in the same order (heavy revision)';
      const here = extracted ? [s.test_text || ''] : cellText(bytes, s.test_start, s.test_end);
      let there;
      if (!('registered_start' in s)) {
        there = [el('span', { className: 'muted' }, '(where it is in the registered text is ' +
                    'not shown to this caller)')];
      } else if (texts[i]) {
        there = cellText(texts[i], s.registered_start, s.registered_end);
      } else {
        there = [el('span', { className: 'muted' }, 'bytes ' + s.registered_start + '-' +
                    s.registered_end + ' of the registered document (its text is not readable ' +
                    'here)')];
      }
      const hereClass = s.excluded ? 'passage excluded'
          : s.revision_run ? 'passage' : 'passage tint-' + (i % COLOURS);
      const rowAttributes = s.excluded ? { 'data-excluded': s.excluded }
          : s.revision_run ? { 'data-revision-run': '' } : {};
      sbs.tBodies[0].append(el('tr', rowAttributes,
          el('td', { className: hereClass }, el('span', { className: 'muted' }, where), '\n',
             ...here),
          el('td', { className: 'passage' }, ...there)));
    }
    section.append(sbs);
  });

  const p = r.params || {};
  const params = el('dl', { className: 'params' });
  const row = (k, v) => params.append(el('dt', {}, k), el('dd', {}, String(v)));
  row('decision', p.function);
  row('threshold', p.threshold);
  row('min. passage', p.min_passage_units + ' words');
  row('max. results', p.max_results ? p.max_results : 'all');
  row('common chunks', p.max_doc_frequency ? 'ignored past ' + p.max_doc_frequency +
                                             ' documents' : 'all counted');
  row('sampling', p.sample_size ? p.sample_size + ' chunks' : 'none');
  row('verification', p.verify_k ? 'word ' + p.verify_k + '-grams' : 'none');
  row('heavy revisions', p.heavy_revisions ? 'looked for' : 'not looked for');
  row('exclusions', exclusionsText(p));
  row('chunking', p.chunking);
  section.append(el('details', {}, el('summary', {}, 'Parameters'), params));
  return section;
}

// The document's text with the counted passages in their sources' colours and the excluded
// ones marked with their reasons (html_report.cc's TextView).
function textView(bytes, r, matches, counted) {
  const paint = new Painter();
  for (const range of counted) paint.paint(range.start, range.end, range.label, bytes.length);
  for (const m of matches) {
    for (const s of m.spans || []) {
      if (s.excluded) paint.paint(s.test_start, s.test_end, 'matched:' + s.excluded, bytes.length);
    }
  }
  for (const e of r.excluded || []) {
    paint.paint(e.test_start, e.test_end, 'region:' + e.reason, bytes.length);
  }
  const pre = el('pre', { className: 'text' });
  let at = 0;
  for (const range of paint.ranges()) {
    pre.append(decode(bytes, at, range.start));
    const passage = decode(bytes, range.start, range.end);
    if (typeof range.label === 'number') {
      pre.append(el('mark', { className: 'src-' + (range.label % COLOURS),
                              title: sourceName(matches[range.label]) }, passage));
    } else {
      const [kind, reason] = range.label.split(':');
      const matched = kind === 'matched';
      pre.append(el(matched ? 'mark' : 'span', {
        className: 'excluded', 'data-excluded': reason,
        title: (matched ? 'matched, but excluded: ' : 'excluded: ') + exclusionLabel(reason),
      }, passage));
    }
    at = range.end;
  }
  pre.append(decode(bytes, at, bytes.length));
  return pre;
}

// ------------------------------------------------------------------ owners

async function register(event) {
  event.preventDefault();
  const file = $('register-file').files[0];
  if (!file) return;
  const title = $('register-title-input').value.trim() || file.name;
  const form = new FormData();
  form.append('file', file, file.name);
  form.append('title', title);
  const collection = $('register-collection').value.trim();
  if (collection) form.append('collection', collection);
  const format = formatOf(file.name);
  if (format) form.append('format', format);
  const out = $('register-result');
  out.className = '';
  out.textContent = 'Registering ' + file.name + '...';
  let reply;
  try {
    reply = await upload('/v1/documents', form, () => {});
  } catch (error) {
    reply = { status: 0, error: error.message };
  }
  if (reply.status === 201 || reply.status === 200) {
    const b = reply.body;
    out.textContent = (b.created === false ? 'Already registered as #' : 'Registered as #') +
                      b.doc_id + ' "' + title + '"' +
                      (collection ? ' in ' + collection : '') + '.';
    $('register-form').reset();
  } else {
    out.className = 'error';
    out.textContent = 'Not registered: ' + reply.error;
  }
}

async function showMatches(event) {
  event.preventDefault();
  const params = new URLSearchParams();
  const doc = $('matches-doc').value.trim().replace(/^#/, '');
  const since = $('matches-since').value.trim();
  if (doc) params.set('doc_id', doc);
  if (since) params.set('since', since);
  const out = $('matches-result');
  const query = params.toString();
  const reply = await api('GET', '/v1/matches' + (query ? '?' + query : ''));
  if (reply.status !== 200) {
    out.replaceChildren(el('p', { className: 'error', role: 'alert' }, reply.error));
    return;
  }
  const entries = reply.body.matches || [];
  if (!entries.length) {
    out.replaceChildren(el('p', {}, 'No checks have reported your documents.'));
    return;
  }
  const list = table('matches', ['time', 'document', 'collection', 'checked by',
                                 'share of the checked text', 'decision', 'SHA-256 of the text']);
  for (const m of entries) {
    list.tBodies[0].append(el('tr', {},
        el('td', {}, m.time), el('td', {}, '#' + m.doc_id), el('td', {}, m.collection),
        el('td', {}, m.checker), el('td', { className: 'num' }, percent(m.ratio)),
        el('td', {}, m.violation ? el('span', { className: 'violation' }, 'violation')
                                 : 'below threshold'),
        el('td', { className: 'hash', title: m.test_sha256 },
           m.test_sha256 ? m.test_sha256.slice(0, 16) + '…' : '-')));
  }
  out.replaceChildren(el('p', {}, entries.length + ' check(s) reported your documents.'), list);
}

// ------------------------------------------------------------------ wiring

function wireDropZone() {
  const zone = $('drop-zone');
  const over = (event) => {
    event.preventDefault();
    zone.classList.add('dragging');
  };
  zone.addEventListener('dragenter', over);
  zone.addEventListener('dragover', over);
  zone.addEventListener('dragleave', () => zone.classList.remove('dragging'));
  zone.addEventListener('drop', (event) => {
    event.preventDefault();
    zone.classList.remove('dragging');
    const files = Array.from(event.dataTransfer.files || []);
    for (const file of files) checkFile(file, file.name);
    if (files.length) say(files.length + ' file(s) dropped: checking.');
  });
}

document.addEventListener('DOMContentLoaded', () => {
  $('sign-in-form').addEventListener('submit', signIn);
  $('sign-out').addEventListener('click', signOut);
  $('check-form').addEventListener('submit', submitChecks);
  $('register-form').addEventListener('submit', register);
  $('matches-form').addEventListener('submit', showMatches);
  wireDropZone();
  refreshSession();
});
