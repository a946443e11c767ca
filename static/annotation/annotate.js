// Goldkey item page: autosave every answer the moment it is given, keyboard shortcuts (j/p next and
// previous as on the adjudication pages, s skip, z undo, q the item list; all off when the user turned
// single-key shortcuts off), the guidelines dialog, time on item.
// No framework: one small file, served locally.
//
// Nothing is lost: saves go out one after another (a queue, never two requests of this page at once);
// each carries the revision this page last saw, so a change over what another tab saved is refused
// (409) and the page shows what was saved there; a note is sent as the page hides or unloads (fetch
// keepalive), and kept in sessionStorage until the server has it, so a reload resends it.
(function () {
  "use strict";
  const root = document.getElementById("annotate");
  if (!root) return;
  const saveUrl = root.dataset.saveUrl;
  const locked = root.dataset.locked === "1";
  const pagePhase = parseInt(root.dataset.phase || "1", 10);
  let autoAdvance = root.dataset.autoAdvance === "1";
  let itemDone = false;  // the last save's word on whether this item is answered in the page's phase
  const status = document.getElementById("save-status");
  const conflict = document.getElementById("conflict");
  const csrf = (document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/) || [])[1] || "";
  const storeKey = "goldkey-unsent:" + saveUrl;
  // One id per loaded page: the server tells this page's own requests from another tab's.
  const writer = (window.crypto && crypto.randomUUID) ? crypto.randomUUID() : String(Math.random()).slice(2) + Date.now();
  let revision = parseInt(root.dataset.revision || "0", 10);
  let seq = 0;
  let queued = null;     // values waiting to go out, merged (the latest value of a key wins)
  let inFlight = null;   // the values of the request on the wire
  let waiters = [];      // called once the queue is empty
  let shownAt = performance.now();
  let visibleMs = 0;

  function elapsed() {
    // Time on item counts only while the page is visible.
    if (document.visibilityState === "visible") {
      visibleMs += performance.now() - shownAt;
    }
    shownAt = performance.now();
    const ms = Math.round(visibleMs);
    visibleMs = 0;
    return ms;
  }

  function setStatus(text, cls) {
    status.textContent = text;
    status.className = "save-status " + (cls || "");
  }

  function textFields() { return root.querySelectorAll("textarea[data-key], input[data-key]"); }

  // Show values as saved on the server: choices always; a text field unless it holds an edit not yet sent.
  function show(values, force) {
    root.querySelectorAll("button.choice").forEach(function (b) {
      if (!force && (!(b.dataset.key in values) || (queued && b.dataset.key in queued))) return;
      const on = values[b.dataset.key] === b.dataset.value;
      b.classList.toggle("selected", on);
      b.setAttribute("aria-pressed", on ? "true" : "false");
    });
    textFields().forEach(function (f) {
      const key = f.dataset.key;
      if (!(key in values) && !force) return;
      if (!force && (f.value !== f._last || (queued && key in queued))) return;
      f.value = values[key] || "";
      f._last = f.value;
    });
  }

  function remember(request) {
    try { sessionStorage.setItem(storeKey, JSON.stringify(request)); } catch (e) { /* storage full or off */ }
  }
  function forget(sentSeq, sentWriter) {
    try {
      const kept = JSON.parse(sessionStorage.getItem(storeKey) || "null");
      if (kept && kept.writer === sentWriter && kept.seq <= sentSeq) sessionStorage.removeItem(storeKey);
    } catch (e) { /* nothing kept */ }
  }

  function post(request, keepalive) {
    return fetch(saveUrl, {
      method: "POST",
      credentials: "same-origin",
      keepalive: !!keepalive,
      headers: { "Content-Type": "application/json", "X-CSRFToken": decodeURIComponent(csrf) },
      body: JSON.stringify(request),
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (data) {
        if (!r.ok) {
          throw Object.assign(new Error(data.detail || r.statusText), { status: r.status, data: data, fatal: r.status < 500 });
        }
        return data;
      });
    });
  }

  function attempt(request, tries) {
    // Retries are safe: the same request again (same writer and number) changes nothing twice.
    return post(request, true).catch(function (err) {
      if (!err.fatal && tries < 4) {
        return new Promise(function (res) { setTimeout(res, 400 * (tries + 1)); }).then(function () { return attempt(request, tries + 1); });
      }
      throw err;
    });
  }

  function request(values) {
    seq += 1;
    const r = { values: values, time_on_item_ms: elapsed(), revision: revision, writer: writer, seq: seq };
    if (Object.keys(values).length) remember(r);
    return r;
  }

  function saved(r, data) {
    forget(r.seq, r.writer);
    if (typeof data.revision === "number" && data.revision >= revision) revision = data.revision;
    if (data.values) show(data.values, false);
    // The bar and the count are this page's phase: when the phase moved on elsewhere (Phase 1 finished
    // in another tab) the page says so rather than showing the next phase's progress under this header.
    if (typeof data.phase1_done === "boolean") itemDone = pagePhase === 2 ? data.phase2_done : data.phase1_done;
    const mine = data.phases && data.phases[pagePhase];
    if (mine) {
      const bar = document.getElementById("phase-progress");
      if (bar) { bar.style.width = mine.percent + "%"; bar.parentNode.setAttribute("aria-valuenow", mine.percent); }
      const done = document.getElementById("progress-done");
      if (done) done.textContent = mine.done;
    }
    const moved = typeof data.phase === "number" && data.phase !== pagePhase;
    if (moved) {
      const note = document.getElementById("phase-moved");
      if (note) note.hidden = false;
      const banner = document.getElementById("phase-ready");
      if (banner) banner.hidden = true;  // that phase has ended: its "ready" no longer applies
    } else if (data.phase_ready) {
      const banner = document.getElementById("phase-ready");
      if (banner) banner.hidden = false;
    }
  }

  function failed(r, err) {
    if (err.status === 409 && err.data && err.data.current) {
      forget(r.seq, r.writer);
      const current = err.data.current;
      revision = current.revision;
      const mine = Object.assign({}, r.values, queued || {});
      queued = null;  // based on what this page showed before: never sent over the newer answer
      show(current.values, true);
      const lost = Object.keys(mine).filter(function (k) { return (current.values[k] || "") !== mine[k]; });
      conflict.textContent = err.message + (lost.length ? " — your unsaved version: " +
        lost.map(function (k) { return k + " = " + JSON.stringify(mine[k]); }).join("; ") : "");
      conflict.hidden = false;
      setStatus("not saved: changed elsewhere", "error");
      return;
    }
    setStatus("not saved: " + err.message, "error");
  }

  function pump() {
    if (inFlight || locked) return;
    if (!queued) {
      const done = waiters; waiters = [];
      done.forEach(function (f) { f(); });
      return;
    }
    const values = queued; queued = null;
    inFlight = values;
    setStatus("saving…", "saving");
    const r = request(values);
    attempt(r, 0).then(function (data) {
      saved(r, data);
      setStatus(queued ? "saving…" : "saved", queued ? "saving" : "saved");
    }, function (err) { failed(r, err); }).then(function () { inFlight = null; pump(); });
  }

  function save(values) {
    if (locked) return Promise.resolve();
    queued = Object.assign(queued || {}, values);
    setStatus("saving…", "saving");
    const idle = new Promise(function (res) { waiters.push(res); });
    pump();
    return idle;
  }

  function idle() {
    return (inFlight || queued) ? new Promise(function (res) { waiters.push(res); }) : Promise.resolve();
  }

  function flushFields() { textFields().forEach(function (f) { if (f._flush) f._flush(); }); }

  // The page is going away (reload, close, another tab in front): whatever is not yet on the server
  // goes out now, in a request that outlives the page. When one is on the wire its values are included
  // again, so the newer request carries everything; the server drops the older one if it arrives second.
  function sendNow() {
    if (locked) return;
    flushFields();  // with nothing on the wire this sends at once (every request is keepalive)
    const ms = elapsed();
    if (!queued) {
      if (ms > 0) post({ values: {}, time_on_item_ms: ms }, true).catch(function () {});
      return;
    }
    // Waiting behind the request on the wire: it cannot wait for that answer any more.
    const values = Object.assign({}, inFlight || {}, queued);
    queued = null;
    visibleMs += ms;
    const r = request(values);
    post(r, true).then(function (data) { saved(r, data); }, function (err) { failed(r, err); });
  }

  function choose(button) {
    if (locked || button.disabled) return;
    const key = button.dataset.key;
    root.querySelectorAll('button.choice[data-key="' + key + '"]').forEach(function (b) {
      b.classList.toggle("selected", b === button);
      b.setAttribute("aria-pressed", b === button ? "true" : "false");
    });
    // A note being typed is saved first: it goes out before the choice, one after the other.
    flushFields();
    const values = {};
    values[key] = button.dataset.value;
    // Auto-advance (a preference): once the server says the item is answered for this page's phase (every
    // question it asks, a conflicting turn included), the next item.
    return save(values).then(function () {
      if (autoAdvance && itemDone && !leaving) go(root.dataset.next);
    });
  }

  root.querySelectorAll("button.choice").forEach(function (b) {
    b.addEventListener("click", function () { choose(b); });
  });

  // Text fields (notes, the conflicting turn id): saved as you type (debounced) and on leaving.
  textFields().forEach(function (field) {
    let timer = null;
    field._last = field.value;
    const flush = function () {
      clearTimeout(timer);
      if (field.value === field._last) return;
      field._last = field.value;
      const values = {};
      values[field.dataset.key] = field.value;
      save(values);
    };
    field.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(flush, 500); });
    field.addEventListener("blur", flush);
    field._flush = flush;
  });

  // A request this tab sent as it unloaded (a reload) may not have reached the server before this page
  // was rendered: send it again, as the same request, so it counts once whichever arrives first.
  (function resendUnsent() {
    let kept = null;
    try { kept = JSON.parse(sessionStorage.getItem(storeKey) || "null"); } catch (e) { kept = null; }
    if (!kept || locked || !kept.values) return;
    show(kept.values, false);
    textFields().forEach(function (f) {
      if (f.dataset.key in kept.values) { f.value = kept.values[f.dataset.key]; f._last = f.value; }
    });
    inFlight = kept.values;
    setStatus("saving…", "saving");
    const r = Object.assign({}, kept, { time_on_item_ms: 0 });
    attempt(r, 0).then(function (data) { saved(r, data); setStatus("saved", "saved"); },
      function (err) { failed(r, err); }).then(function () { inFlight = null; pump(); });
  })();

  // The recipient's turn index (Phase 2, Q3): filter and pick a conflicting turn.
  const filter = document.getElementById("turn-filter");
  if (filter) {
    filter.addEventListener("input", function () {
      const q = filter.value.toLowerCase();
      document.querySelectorAll("#turns li").forEach(function (li) {
        li.hidden = q && li.textContent.toLowerCase().indexOf(q) === -1;
      });
    });
  }
  document.querySelectorAll(".pick-turn").forEach(function (b) {
    b.addEventListener("click", function () {
      const field = root.querySelector('input[data-key="q3turn"]');
      if (!field || locked) return;
      field.value = b.dataset.turn;
      field._flush();
      const conflictChoice = root.querySelector('button.choice[data-key="q3"][data-value="conflict"]');
      if (conflictChoice && !conflictChoice.classList.contains("selected")) choose(conflictChoice);
    });
  });

  // The guidelines and keys dialog: modal (aria-modal), focus moves into it, Tab stays inside it, and
  // closing gives focus back to whatever opened it.
  const overlay = document.getElementById("conventions");
  const dialog = overlay && overlay.querySelector("[role=dialog]");
  let opener = null;
  function focusables() {
    return Array.from(dialog.querySelectorAll("a[href], button, input:not([type=hidden]), textarea, select, [tabindex='0']"))
      .filter(function (el) { return !el.disabled && el.offsetParent !== null; });
  }
  function toggleHelp(show) {
    if (!overlay || overlay.hidden === !show) return;
    if (show) {
      opener = document.activeElement;
      overlay.hidden = false;
      dialog.focus();
    } else {
      overlay.hidden = true;
      const back = opener && document.contains(opener) ? opener : document.querySelector("[data-help]");
      if (back && back.focus) back.focus();
      opener = null;
    }
  }
  document.querySelectorAll("[data-help]").forEach(function (b) { b.addEventListener("click", function () { toggleHelp(true); }); });
  if (overlay) {
    overlay.querySelector("[data-close]").addEventListener("click", function () { toggleHelp(false); });
    overlay.addEventListener("keydown", function (e) {
      if (e.key !== "Tab") return;
      const items = focusables();
      if (!items.length) return;
      const first = items[0], last = items[items.length - 1];
      if (e.shiftKey && (document.activeElement === first || document.activeElement === dialog)) { last.focus(); e.preventDefault(); }
      else if (!e.shiftKey && document.activeElement === last) { first.focus(); e.preventDefault(); }
    });
    if (!overlay.hidden) { opener = document.querySelector("[data-help]"); dialog.focus(); }
  }

  // Keyboard preferences: saved for the user as soon as a box changes (the form's button does the same
  // without a script).
  const prefs = document.getElementById("keyboard-prefs");
  if (prefs) {
    prefs.addEventListener("change", function () {
      const body = new URLSearchParams(new FormData(prefs));
      fetch(prefs.action, {
        method: "POST", credentials: "same-origin", body: body,
        headers: { "Accept": "application/json", "X-CSRFToken": decodeURIComponent(csrf) },
      }).then(function (r) { if (!r.ok) throw new Error(r.statusText); return r.json(); }).then(function (p) {
        if (p.single_key_shortcuts) delete document.body.dataset.singleKeyShortcuts;
        else document.body.dataset.singleKeyShortcuts = "off";
        autoAdvance = !!p.auto_advance;
        document.getElementById("pref-status").textContent = "saved";
      }, function (err) { document.getElementById("pref-status").textContent = "not saved: " + err.message; });
    });
  }

  // Skip and undo are forms (they work without a script); with one, what is being typed is saved first.
  ["skip-form", "undo-form"].forEach(function (id) {
    const form = document.getElementById(id);
    if (!form) return;
    form.addEventListener("submit", function (e) {
      if (form._ready) return;
      e.preventDefault();
      leaveBy(function () { form._ready = true; form.submit(); });
    });
  });

  let leaving = false;
  function leaveBy(then) {
    if (leaving) return;
    leaving = true;
    // Flush any note being typed and record the time spent here, then leave once every save is done.
    flushFields();
    const recordTime = locked ? Promise.resolve() : save({});
    Promise.resolve(recordTime).then(idle).then(then);
  }
  function go(url) {
    if (!url) return;
    leaveBy(function () { window.location.href = url; });
  }
  function submit(id) {
    const form = document.getElementById(id);
    if (form) form.requestSubmit();
  }

  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden") {
      visibleMs += performance.now() - shownAt;
      if (!leaving) sendNow();
    }
    shownAt = performance.now();
  });
  window.addEventListener("pagehide", function () {
    if (leaving) return;  // go() already saved everything
    sendNow();
  });

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    const typing = t && (t.tagName === "TEXTAREA" ||
      (t.tagName === "INPUT" && ["button", "submit", "checkbox", "radio"].indexOf(t.type) === -1));
    if (typing) {
      if (e.key === "Escape") { t.blur(); e.preventDefault(); }
      return;
    }
    if (e.key === "Escape") { toggleHelp(false); return; }
    // Single-key shortcuts off (WCAG 2.1.4): no key acts by itself; buttons, links and Tab reach everything.
    if (document.body.dataset.singleKeyShortcuts === "off") return;
    if (e.key === "?") { toggleHelp(overlay && overlay.hidden); e.preventDefault(); return; }
    if (overlay && !overlay.hidden) return;  // the dialog is modal: keys act on it alone
    if (e.key === "j" || e.key === "ArrowRight") { go(root.dataset.next); e.preventDefault(); return; }
    if (e.key === "p" || e.key === "ArrowLeft") { go(root.dataset.prev); e.preventDefault(); return; }
    if (e.key === "q") { go(root.dataset.list); e.preventDefault(); return; }
    if (e.key === "u") { go(root.dataset.first); e.preventDefault(); return; }
    if (e.key === "s") { submit("skip-form"); e.preventDefault(); return; }
    if (e.key === "z") { submit("undo-form"); e.preventDefault(); return; }
    if (e.key === "n") {
      const note = root.querySelector("label.note textarea[data-key]") || root.querySelector("textarea[data-key]");
      if (note) { note.focus(); e.preventDefault(); }
      return;
    }
    // A field of the item page reached by its own key (a judged answer's note on a wrong gold answer: g).
    const field = root.querySelector('[data-focus-key="' + e.key + '"]');
    if (field && !field.disabled) { field.focus(); e.preventDefault(); return; }
    // A section the item page folds away (a judged answer's evidence sessions) opens and closes by its key.
    const folded = root.querySelector('details[data-toggle-key="' + e.key + '"]');
    if (folded) { folded.open = !folded.open; e.preventDefault(); return; }
    const button = root.querySelector('button.choice[data-shortcut="' + e.key + '"]');
    if (button) { choose(button); e.preventDefault(); }
  });
})();
