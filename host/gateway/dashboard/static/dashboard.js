// toolhost dashboard: live updates from GET /api/v1/events (Server-Sent
// Events; no polling) and the admin buttons. Every string from the server
// is set with textContent, never parsed as HTML.
'use strict';
(function () {
  const body = document.body;
  const live = document.getElementById('live');
  const notice = document.getElementById('notice');
  const backends = document.getElementById('backends');
  const audit = document.getElementById('audit');
  const tools = document.getElementById('tools');
  const admin = body.dataset.admin === 'true';
  const maxAuditRows = 50;

  function say(text, isError) {
    notice.textContent = text;
    notice.className = isError ? 'notice error' : 'notice';
  }

  function rowOf(name) {
    for (const tr of backends.tBodies[0].rows) {
      if (tr.dataset.backend === name) return tr;
    }
    return null;
  }

  function uptime(sec) {
    if (!sec || sec <= 0) return '-';
    sec = Math.floor(sec);
    const d = Math.floor(sec / 86400), h = Math.floor(sec / 3600), m = Math.floor(sec / 60);
    if (d > 0) return d + 'd' + (h % 24) + 'h';
    if (h > 0) return h + 'h' + (m % 60) + 'm';
    if (m > 0) return m + 'm' + (sec % 60) + 's';
    return sec + 's';
  }

  function cell(tr, cls, text) {
    let td = tr.querySelector('td.' + cls);
    if (!td) {
      td = document.createElement('td');
      td.className = cls;
      tr.appendChild(td);
    }
    td.textContent = text == null ? '' : String(text);
    return td;
  }

  function newRow(name) {
    const tr = document.createElement('tr');
    tr.dataset.backend = name;
    for (const cls of ['name', 'kind', 'state', 'health', 'circuit', 'restarts', 'uptime', 'tools', 'sandbox', 'last_error', 'last_denial']) {
      cell(tr, cls, '');
    }
    backends.tBodies[0].appendChild(tr);
    return tr;
  }

  // A backend's status after an event (HostEvent.status).
  function showStatus(st) {
    const tr = rowOf(st.name) || newRow(st.name);
    cell(tr, 'name', st.name);
    cell(tr, 'kind', st.kind);
    cell(tr, 'state', st.state).className = 'state state-' + st.state;
    tr.dataset.state = st.state;
    cell(tr, 'health', st.health + (st.health_error ? ': ' + st.health_error : ''));
    cell(tr, 'circuit', st.circuit + (st.open_tools ? ' (' + st.open_tools.length + ' tools open)' : ''));
    cell(tr, 'restarts', st.restarts).classList.add('num');
    const up = cell(tr, 'uptime', uptime(st.uptime_seconds));
    up.classList.add('num');
    up.dataset.started = st.started_at && st.state === 'ready' ? String(Date.parse(st.started_at) / 1000) : '';
    cell(tr, 'tools', st.tools).classList.add('num');
    cell(tr, 'sandbox', st.sandbox);
    cell(tr, 'last_error', st.last_error);
    cell(tr, 'last_denial', st.last_denial);
    tr.classList.add('fresh');
    setTimeout(function () { tr.classList.remove('fresh'); }, 1500);
  }

  function onHostEvent(e) {
    let ev;
    try { ev = JSON.parse(e.data); } catch (err) { return; }
    if (ev.status) showStatus(ev.status);
    if (ev.kind === 'state' && ev.state === 'closed' && !ev.status) {
      const tr = rowOf(ev.backend);
      if (tr) cell(tr, 'state', 'closed').className = 'state state-closed';
    }
  }

  // Calls and errors of a tool count up live; the percentiles are the
  // page's (reload for fresh ones).
  function countCall(r) {
    if (r.op || !r.tool) return;
    for (const tr of tools.tBodies[0].rows) {
      if (tr.dataset.tool !== r.tool) continue;
      const calls = tr.querySelector('td.calls'), errors = tr.querySelector('td.errors');
      calls.textContent = String((parseInt(calls.textContent, 10) || 0) + 1);
      if (r.outcome !== 'ok') errors.textContent = String((parseInt(errors.textContent, 10) || 0) + 1);
      return;
    }
  }

  function onAudit(e) {
    let r;
    try { r = JSON.parse(e.data); } catch (err) { return; }
    countCall(r);
    const f = audit.dataset;
    if ((f.tool && r.tool !== f.tool) || (f.client && r.client !== f.client) || (f.outcome && r.outcome !== f.outcome)) return;
    const tr = document.createElement('tr');
    const t = new Date(r.time);
    const vals = [t.toISOString().substring(11, 19), r.client, r.profile, r.tool || r.prompt || r.uri || r.op,
      r.backend, r.decision, r.outcome, (r.latency_ms || 0).toFixed(1), r.error];
    vals.forEach(function (v, i) {
      const td = document.createElement('td');
      td.textContent = v == null ? '' : String(v);
      if (i === 6) td.className = 'outcome outcome-' + r.outcome;
      if (i === 7) td.className = 'num';
      if (i === 8) td.className = 'error';
      tr.appendChild(td);
    });
    tr.classList.add('fresh');
    const tb = audit.tBodies[0];
    tb.insertBefore(tr, tb.firstChild);
    while (tb.rows.length > maxAuditRows) tb.deleteRow(tb.rows.length - 1);
    setTimeout(function () { tr.classList.remove('fresh'); }, 1500);
  }

  // Uptime ticks locally between events.
  setInterval(function () {
    const now = Date.now() / 1000;
    for (const td of backends.querySelectorAll('td.uptime')) {
      const s = parseFloat(td.dataset.started);
      if (s > 0) td.textContent = uptime(now - s);
    }
  }, 1000);

  if (admin) {
    backends.addEventListener('click', function (e) {
      const b = e.target.closest('button[data-action]');
      if (!b) return;
      const name = b.dataset.name, action = b.dataset.action;
      b.disabled = true;
      fetch('/api/v1/servers/' + encodeURIComponent(name) + '/' + action, { method: 'POST', credentials: 'same-origin' })
        .then(function (res) {
          return res.json().catch(function () { return {}; }).then(function (j) {
            if (res.ok) say(action + ' ' + name + ': done', false);
            else say(action + ' ' + name + ': ' + ((j.error && j.error.message) || res.status), true);
          });
        })
        .catch(function (err) { say(action + ' ' + name + ': ' + err, true); })
        .finally(function () { b.disabled = false; });
    });
  }

  const es = new EventSource('/api/v1/events');
  es.onopen = function () { live.textContent = 'live'; live.className = 'live on'; };
  es.onerror = function () { live.textContent = 'reconnecting…'; live.className = 'live off'; };
  for (const kind of ['state', 'health', 'circuit', 'catalogue', 'list_changed']) {
    es.addEventListener(kind, onHostEvent);
  }
  es.addEventListener('audit', onAudit);
  window.addEventListener('pagehide', function () { es.close(); });
})();
