// muster up's dashboard: lists and watches nodes, pods, PodGroups, Queues and Events on the API
// server that served this page, or through muster scheduler's --dashboard-address, which
// forwards them (same origin, the bearer token from the URL's fragment), and
// renders who holds each GPU, the queues, the pending gangs with their reason and estimated
// start, the latest scheduling events and the scheduler's cycle latency. Every watch relists
// and reconnects when it drops; while one is down a banner says so.
'use strict';

const GPU = 'nvidia.com/gpu';
const GROUP_ANNOTATION = 'scheduling.k8s.io/group-name';
const GPU_INDICES_ANNOTATION = 'muster.dev/gpu-indices';
const ESTIMATED_START_ANNOTATION = 'muster.dev/estimated-start';
const VOLCANO = '/apis/scheduling.volcano.sh/v1beta1';
const KINDS = {
  nodes: '/api/v1/nodes',
  pods: '/api/v1/pods',
  podgroups: VOLCANO + '/podgroups',
  queues: VOLCANO + '/queues',
  events: '/api/v1/events',
};
const MAX_EVENTS = 15;

// The token: from the fragment muster up prints (then dropped from the address bar, so that it
// is not left on screen), or from this tab's earlier load.
const token = (() => {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get('token');
  if (fromHash) {
    sessionStorage.setItem('muster-token', fromHash);
    history.replaceState(null, '', location.pathname);
    return fromHash;
  }
  return sessionStorage.getItem('muster-token') || '';
})();

const objects = {};  // kind -> Map(namespace/name -> object)
const problems = {};  // kind -> why its watch is down; absent while it is up
for (const kind of Object.keys(KINDS)) {
  objects[kind] = new Map();
  problems[kind] = 'connecting';
}

const keyOf = (o) => (o.metadata.namespace ? o.metadata.namespace + '/' : '') + o.metadata.name;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function request(path) {
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = 'Bearer ' + token;
  return fetch(path, { headers, cache: 'no-store' });
}

async function refusal(response) {
  if (response.status === 401) {
    return 'the server refused the token: open the dashboard URL that muster up prints ' +
           '(on a cluster: muster scheduler\'s log)';
  }
  return 'HTTP ' + response.status;
}

// List, then watch from the list's resourceVersion; on any end or error, say so and start over.
async function follow(kind) {
  let backoff = 500;
  for (;;) {
    try {
      const listed = await request(KINDS[kind]);
      if (!listed.ok) throw new Error(await refusal(listed));
      const list = await listed.json();
      const fresh = new Map();
      for (const item of list.items || []) fresh.set(keyOf(item), item);
      objects[kind] = fresh;
      const watched = await request(KINDS[kind] + '?watch=1&allowWatchBookmarks=true' +
                                    '&resourceVersion=' + list.metadata.resourceVersion);
      if (!watched.ok) throw new Error(await refusal(watched));
      delete problems[kind];
      backoff = 500;
      scheduleRender();
      await readEvents(kind, watched.body.getReader());
      problems[kind] = 'the watch ended';
    } catch (e) {
      problems[kind] = e.message || String(e);
    }
    scheduleRender();
    await sleep(backoff);
    backoff = Math.min(backoff * 2, 5000);
  }
}

async function readEvents(kind, reader) {
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let newline;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, newline).trim();
      buffer = buffer.slice(newline + 1);
      if (!line) continue;
      const event = JSON.parse(line);
      if (event.type === 'ERROR') {
        throw new Error((event.object && event.object.message) || 'watch error');
      }
      if (event.type === 'BOOKMARK') continue;
      if (event.type === 'DELETED') objects[kind].delete(keyOf(event.object));
      else objects[kind].set(keyOf(event.object), event.object);
      scheduleRender();
    }
  }
}

let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  setTimeout(() => { renderQueued = false; render(); }, 50);
}

// --- Quantities ------------------------------------------------------------------------------

const SUFFIX = { n: 1e-9, u: 1e-6, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50 };
function quantity(text) {
  if (text === undefined || text === null) return 0;
  const m = /^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$/.exec(String(text).trim());
  if (!m) return 0;
  return parseFloat(m[1]) * (SUFFIX[m[2]] || 1);
}
function showQuantity(resource, value) {
  if (resource === 'memory' || resource.endsWith('storage')) {
    if (value >= 2 ** 30) return +(value / 2 ** 30).toFixed(1) + 'Gi';
    if (value >= 2 ** 20) return +(value / 2 ** 20).toFixed(1) + 'Mi';
    return String(Math.round(value));
  }
  return String(+value.toFixed(3));
}
function add(into, resources) {
  for (const [name, value] of Object.entries(resources || {})) {
    into[name] = (into[name] || 0) + quantity(value);
  }
}
function podRequests(pod) {
  const total = {};
  for (const c of pod.spec.containers || []) {
    const r = c.resources || {};
    const requests = Object.assign({}, r.limits || {}, r.requests || {});
    add(total, requests);
  }
  return total;
}

// --- The model -------------------------------------------------------------------------------

function groupOf(pod) {
  const name = (pod.metadata.annotations || {})[GROUP_ANNOTATION];
  return name ? pod.metadata.namespace + '/' + name : '';
}
function jobOf(pod) {
  const labels = pod.metadata.labels || {};
  const name = labels['volcano.sh/job-name'] || labels['job-name'];
  if (name) return pod.metadata.namespace + '/' + name;
  return groupOf(pod) || keyOf(pod);
}
const finished = (pod) => pod.status && (pod.status.phase === 'Succeeded' ||
                                         pod.status.phase === 'Failed');
const bound = (pod) => pod.spec.nodeName && !finished(pod);

function colourOf(job) {
  let h = 0;
  for (const ch of job) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return 'hsl(' + (h % 360) + ', 70%, 86%)';
}

// namespace/name of a PodGroup -> the number of its pods bound to nodes.
function boundByGroup(pods) {
  const counts = new Map();
  for (const pod of pods) {
    const group = groupOf(pod);
    if (group && bound(pod)) counts.set(group, (counts.get(group) || 0) + 1);
  }
  return counts;
}

// A gang is partly bound when some but fewer than minMember of its pods hold a node.
function partialGroups(podgroups, counts) {
  const partial = new Set();
  for (const [key, pg] of podgroups) {
    const have = counts.get(key) || 0;
    const want = (pg.spec && pg.spec.minMember) || 0;
    if (have > 0 && have < want) partial.add(key);
  }
  return partial;
}

// --- Rendering -------------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === 'class') node.className = v;
    // Through the CSSOM: the page's Content-Security-Policy refuses style attributes.
    else if (k === 'style') Object.assign(node.style, v);
    else node.setAttribute(k, v);
  }
  for (const child of children) {
    if (child === undefined || child === null) continue;
    node.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return node;
}
function fill(tbody, rows, columns, emptyText) {
  tbody.replaceChildren(...(rows.length ? rows
    : [el('tr', {}, el('td', { colspan: String(columns), class: 'empty' }, emptyText))]));
}
const byName = (a, b) => a.metadata.name.localeCompare(b.metadata.name);

function renderGpus(nodes, pods, partial) {
  const rows = [];
  for (const node of nodes.sort(byName)) {
    const alloc = (node.status && (node.status.allocatable || node.status.capacity)) || {};
    const count = Math.round(quantity(alloc[GPU]));
    const slots = new Array(count).fill(null);
    const unplaced = [];
    for (const pod of pods.filter((p) => p.spec.nodeName === node.metadata.name && !finished(p))) {
      const wants = Math.round(podRequests(pod)[GPU] || 0);
      if (wants === 0) continue;
      const text = (pod.metadata.annotations || {})[GPU_INDICES_ANNOTATION];
      const indices = text ? text.split(',').map(Number) : [];
      if (indices.length) indices.forEach((i) => { if (i < count) slots[i] = pod; });
      else for (let i = 0; i < wants; i++) unplaced.push(pod);
    }
    for (const pod of unplaced) {
      const free = slots.indexOf(null);
      if (free >= 0) slots[free] = pod;
    }
    const product = (node.metadata.labels || {})['nvidia.com/gpu.product'] || '';
    const cells = slots.map((pod, i) => {
      const id = node.metadata.name + '/' + i;
      if (!pod) {
        return el('div', { class: 'gpu free', tabindex: '0', 'data-gpu': id,
          'aria-label': 'GPU ' + i + ' of ' + node.metadata.name + ': free' },
        el('span', { class: 'idx' }, 'GPU ' + i), el('span', { class: 'pod' }, 'free'));
      }
      const job = jobOf(pod);
      const isPartial = partial.has(groupOf(pod));
      const label = 'GPU ' + i + ' of ' + node.metadata.name + ': ' + keyOf(pod) + ', job ' + job +
        (isPartial ? ', idle: its gang is only partly bound' : '');
      return el('div', { class: 'gpu' + (isPartial ? ' partial' : ''), tabindex: '0',
        'data-gpu': id, 'data-pod': keyOf(pod), 'data-job': job,
        style: { background: colourOf(job) }, title: label, 'aria-label': label },
      el('span', { class: 'idx' },
        'GPU ' + i + ' \u00b7 ' + ((pod.status && pod.status.phase) || '')),
      el('span', { class: 'pod' }, keyOf(pod)),
      isPartial ? el('span', { class: 'flag' }, 'partial gang: idle') : null);
    });
    rows.push(el('tr', {},
      el('th', { scope: 'row' }, el('span', { class: 'node-name' }, node.metadata.name),
        el('br'), el('span', { class: 'node-meta' }, count + ' GPU' + (count === 1 ? '' : 's') +
          (product ? ' \u00b7 ' + product : ''))),
      el('td', {}, cells.length ? el('div', { class: 'gpus' }, ...cells)
        : el('span', { class: 'empty' }, 'no GPUs'))));
  }
  fill(document.querySelector('#gpu-table tbody'), rows, 2, 'no nodes');
}

function unschedulableMessage(pg) {
  const conditions = (pg.status && pg.status.conditions) || [];
  let best = null;
  for (const c of conditions) {
    if (c.type !== 'Unschedulable' || c.status === 'False') continue;
    if (!best || String(c.lastTransitionTime) >= String(best.lastTransitionTime)) best = c;
  }
  return best ? (best.message || best.reason || 'Unschedulable') : '';
}

function renderPending(podgroups) {
  const rows = [];
  const waiting = [...podgroups.values()].filter((pg) => {
    const phase = pg.status && pg.status.phase;
    return !phase || phase === 'Pending' || phase === 'Inqueue';
  }).sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
  for (const pg of waiting) {
    const owner = (pg.metadata.ownerReferences || [])[0];
    const estimate = (pg.metadata.annotations || {})[ESTIMATED_START_ANNOTATION];
    let when = el('span', { class: 'empty' }, 'not estimated');
    if (estimate) {
      const t = new Date(estimate);
      when = el('time', { datetime: estimate }, isNaN(t) ? estimate : t.toLocaleString());
    }
    rows.push(el('tr', { 'data-podgroup': keyOf(pg) },
      el('td', {}, owner ? pg.metadata.namespace + '/' + owner.name : keyOf(pg),
        owner ? el('div', { class: 'node-meta' }, owner.kind + ' \u00b7 ' + pg.metadata.name)
          : null),
      el('td', {}, (pg.spec && pg.spec.queue) || 'default'),
      el('td', { class: 'num' }, String((pg.spec && pg.spec.minMember) || 0)),
      el('td', {}, (pg.status && pg.status.phase) || 'Pending'),
      el('td', { class: 'reason' }, unschedulableMessage(pg) || 'waiting for the next cycle'),
      el('td', {}, when)));
  }
  fill(document.querySelector('#pending-table tbody'), rows, 6, 'no gang is waiting');
  return waiting.length;
}

function renderQueues(queues, podgroups, pods) {
  const groups = objects.podgroups;
  const allocated = new Map();
  const pending = new Map();
  const resources = new Set([GPU, 'cpu', 'memory']);
  const bump = (map, queue, requests) => {
    if (!map.has(queue)) map.set(queue, {});
    add(map.get(queue), requests);
  };
  for (const pod of pods) {
    const pg = groups.get(groupOf(pod));
    const queue = (pg && pg.spec && pg.spec.queue) || 'default';
    if (bound(pod)) bump(allocated, queue, podRequests(pod));
  }
  for (const pg of podgroups.values()) {
    const phase = pg.status && pg.status.phase;
    if (phase && phase !== 'Pending' && phase !== 'Inqueue') continue;
    bump(pending, (pg.spec && pg.spec.queue) || 'default', pg.spec && pg.spec.minResources);
  }
  const list = [...queues.values()].sort(byName);
  for (const q of list) {
    for (const r of Object.keys((q.spec && q.spec.deserved) || {})) resources.add(r);
    for (const r of Object.keys((q.spec && q.spec.capability) || {})) resources.add(r);
  }
  for (const m of [allocated, pending]) {
    for (const v of m.values()) for (const r of Object.keys(v)) if (r !== 'pods') resources.add(r);
  }
  const columns = [...resources];
  document.querySelector('#queue-table thead').replaceChildren(el('tr', {},
    el('th', { scope: 'col' }, 'Queue'), el('th', { scope: 'col' }, 'State'),
    el('th', { scope: 'col', class: 'num' }, 'Weight'),
    ...columns.map((r) => el('th', { scope: 'col' }, r))));
  // Children under their parent (hierarchical queues), depth-first.
  const children = new Map();
  for (const q of list) {
    const parent = (q.spec && q.spec.parent) || '';
    const p = parent === q.metadata.name ? '' : parent;
    if (!children.has(p)) children.set(p, []);
    children.get(p).push(q);
  }
  const ordered = [];
  const seen = new Set();
  const walk = (parent, depth) => {
    for (const q of children.get(parent) || []) {
      if (seen.has(q.metadata.name)) continue;
      seen.add(q.metadata.name);
      ordered.push([q, depth]);
      walk(q.metadata.name, depth + 1);
    }
  };
  walk('', 0);
  for (const q of list) if (!seen.has(q.metadata.name)) ordered.push([q, 0]);
  const rows = ordered.map(([q, depth]) => {
    const name = q.metadata.name;
    const deserved = {};
    add(deserved, (q.spec && (q.spec.deserved || q.spec.capability)) || {});
    const statusAllocated = {};
    add(statusAllocated, q.status && q.status.allocated);
    const have = Object.keys(statusAllocated).length ? statusAllocated
      : (allocated.get(name) || {});
    const waiting = pending.get(name) || {};
    return el('tr', { 'data-queue': name },
      el('th', { scope: 'row', style: { paddingLeft: (0.5 + depth * 1.2) + 'em' } }, name),
      el('td', {}, (q.status && q.status.state) || ''),
      el('td', { class: 'num' }, String((q.spec && q.spec.weight) || '')),
      ...columns.map((r) => el('td', { class: 'num' },
        (r in deserved ? showQuantity(r, deserved[r]) : '\u2013') + ' / ' +
        showQuantity(r, have[r] || 0) + ' / ' + showQuantity(r, waiting[r] || 0))));
  });
  fill(document.querySelector('#queue-table tbody'), rows, 3 + columns.length, 'no queues');
}

function eventTime(e) {
  return e.lastTimestamp || e.eventTime || (e.series && e.series.lastObservedTime) ||
    e.firstTimestamp || e.metadata.creationTimestamp || '';
}

function renderEvents(events) {
  const latest = [...events.values()].sort((a, b) => {
    const t = String(eventTime(b)).localeCompare(String(eventTime(a)));
    return t || Number(b.metadata.resourceVersion || 0) - Number(a.metadata.resourceVersion || 0);
  }).slice(0, MAX_EVENTS);
  const rows = latest.map((e) => {
    const t = eventTime(e);
    const involved = e.involvedObject || e.regarding || {};
    return el('tr', { class: e.type === 'Warning' ? 'warning' : '' },
      el('td', {}, t ? el('time', { datetime: t }, new Date(t).toLocaleTimeString()) : ''),
      el('td', {}, (involved.kind || '') + ' ' +
        (involved.namespace ? involved.namespace + '/' : '') + (involved.name || '')),
      el('td', {}, (e.type === 'Warning' ? '\u26a0 ' : '') + (e.reason || '')),
      el('td', { class: 'reason' }, e.message || e.note || ''));
  });
  fill(document.querySelector('#event-table tbody'), rows, 4, 'no events yet');
}

function render() {
  const nodes = [...objects.nodes.values()];
  const pods = [...objects.pods.values()];
  const partial = partialGroups(objects.podgroups, boundByGroup(pods));
  renderGpus(nodes, pods, partial);
  const waiting = renderPending(objects.podgroups);
  renderQueues(objects.queues, objects.podgroups, pods);
  renderEvents(objects.events);

  let total = 0;
  let held = 0;
  for (const n of nodes) {
    total += Math.round(quantity(((n.status && n.status.allocatable) || {})[GPU]));
  }
  for (const p of pods) if (bound(p)) held += Math.round(podRequests(p)[GPU] || 0);
  document.getElementById('summary').textContent =
    nodes.length + ' node' + (nodes.length === 1 ? '' : 's') + ' \u00b7 ' +
    Math.max(total - held, 0) + '/' + total + ' GPUs free \u00b7 ' + waiting + ' gang' +
    (waiting === 1 ? '' : 's') + ' waiting' +
    (partial.size ? ' \u00b7 ' + partial.size + ' partly bound' : '');

  const down = Object.entries(problems);
  const banner = document.getElementById('banner');
  if (down.length) {
    if (banner.hidden) {
      document.getElementById('updated').textContent =
        'offline since ' + new Date().toLocaleTimeString();
    }
    banner.hidden = false;
    banner.textContent = 'Live updates are down, reconnecting: ' +
      down.map(([kind, why]) => kind + ' (' + why + ')').join(', ');
  } else {
    banner.hidden = true;
    banner.textContent = '';
    document.getElementById('updated').textContent =
      'live \u00b7 updated ' + new Date().toLocaleTimeString();
  }
  document.body.dataset.live = down.length ? 'false' : 'true';
}

// The scheduler's cycle latency, which no API object holds: muster up's /ui/status, every 2 s.
async function pollStatus() {
  for (;;) {
    try {
      const response = await request('/ui/status');
      const s = response.ok ? (await response.json()).scheduler : null;
      if (s) {
        document.getElementById('cycle').textContent = 'scheduler cycle ' +
          s.lastCycleMs.toFixed(1) + ' ms (p50 ' + s.cycleP50Ms.toFixed(1) + ', p99 ' +
          s.cycleP99Ms.toFixed(1) + ' ms over ' + s.cycles + ' cycles)';
      }
    } catch (e) {
      // The watches' banner says the server is away.
    }
    await sleep(2000);
  }
}

render();
for (const kind of Object.keys(KINDS)) follow(kind);
pollStatus();
