// Goldkey item page: autosave every answer the moment it is given, keyboard shortcuts, time on item.
// No framework: one small file, served locally.
(function () {
  "use strict";
  const root = document.getElementById("annotate");
  if (!root) return;
  const saveUrl = root.dataset.saveUrl;
  const locked = root.dataset.locked === "1";
  const status = document.getElementById("save-status");
  const csrf = (document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/) || [])[1] || "";
  let shownAt = performance.now();
  let visibleMs = 0;
  let pending = 0;

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
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden") { visibleMs += performance.now() - shownAt; }
    shownAt = performance.now();
  });

  function setStatus(text, cls) {
    status.textContent = text;
    status.className = "save-status " + (cls || "");
  }

  function save(values, opts) {
    if (locked) return Promise.resolve();
    pending += 1;
    setStatus("saving…", "saving");
    const body = JSON.stringify({ values: values, time_on_item_ms: elapsed() });
    const attempt = function (tries) {
      return fetch(saveUrl, {
        method: "POST",
        credentials: "same-origin",
        keepalive: !!(opts && opts.keepalive),
        headers: { "Content-Type": "application/json", "X-CSRFToken": decodeURIComponent(csrf) },
        body: body,
      }).then(function (r) {
        return r.json().then(function (data) {
          if (!r.ok) { throw Object.assign(new Error(data.detail || r.statusText), { fatal: r.status < 500 }); }
          return data;
        });
      }).catch(function (err) {
        // Retries are safe: the server treats the same values twice as one save.
        if (!err.fatal && tries < 4) {
          return new Promise(function (res) { setTimeout(res, 400 * (tries + 1)); }).then(function () { return attempt(tries + 1); });
        }
        throw err;
      });
    };
    return attempt(0).then(function (data) {
      pending -= 1;
      setStatus(pending ? "saving…" : "saved", pending ? "saving" : "saved");
      if (data.phase1_completed) {
        const banner = document.getElementById("unlocked");
        if (banner) banner.hidden = false;
      }
      if (typeof data.progress_percent === "number") {
        const bar = document.getElementById("phase-progress");
        if (bar) bar.style.width = data.progress_percent + "%";
      }
      return data;
    }).catch(function (err) {
      pending -= 1;
      setStatus("not saved: " + err.message, "error");
    });
  }

  function choose(button) {
    if (locked || button.disabled) return;
    const key = button.dataset.key;
    root.querySelectorAll('button.choice[data-key="' + key + '"]').forEach(function (b) {
      b.classList.toggle("selected", b === button);
      b.setAttribute("aria-pressed", b === button ? "true" : "false");
    });
    const values = {};
    values[key] = button.dataset.value;
    return save(values);
  }

  root.querySelectorAll("button.choice").forEach(function (b) {
    b.addEventListener("click", function () { choose(b); });
  });

  // Text fields (notes, the conflicting turn id): saved as you type (debounced) and on leaving.
  root.querySelectorAll("textarea[data-key], input[data-key]").forEach(function (field) {
    let timer = null;
    let last = field.value;
    const flush = function () {
      clearTimeout(timer);
      if (field.value === last) return;
      last = field.value;
      const values = {};
      values[field.dataset.key] = field.value;
      save(values);
    };
    field.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(flush, 500); });
    field.addEventListener("blur", flush);
    field._flush = flush;
  });

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
      const conflict = root.querySelector('button.choice[data-key="q3"][data-value="conflict"]');
      if (conflict && !conflict.classList.contains("selected")) choose(conflict);
    });
  });

  const overlay = document.getElementById("conventions");
  function toggleHelp(show) { if (overlay) overlay.hidden = !show; }
  document.querySelectorAll("[data-help]").forEach(function (b) { b.addEventListener("click", function () { toggleHelp(true); }); });
  if (overlay) overlay.querySelector("[data-close]").addEventListener("click", function () { toggleHelp(false); });

  let leaving = false;
  function go(url) {
    if (!url || leaving) return;
    leaving = true;
    // Flush any note being typed and record the time spent here, then leave once every save is done.
    root.querySelectorAll("textarea[data-key], input[data-key]").forEach(function (f) { f._flush && f._flush(); });
    const waitForSaves = function () {
      return pending ? new Promise(function (res) { setTimeout(res, 30); }).then(waitForSaves) : Promise.resolve();
    };
    const recordTime = locked ? Promise.resolve() : save({});
    Promise.resolve(recordTime).then(waitForSaves).then(function () { window.location.href = url; });
  }

  window.addEventListener("pagehide", function () {
    if (leaving || locked) return;  // go() already recorded the time
    const ms = elapsed();
    if (ms > 0) {
      fetch(saveUrl, {
        method: "POST", credentials: "same-origin", keepalive: true,
        headers: { "Content-Type": "application/json", "X-CSRFToken": decodeURIComponent(csrf) },
        body: JSON.stringify({ values: {}, time_on_item_ms: ms }),
      }).catch(function () {});
    }
  });

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    const typing = t && (t.tagName === "TEXTAREA" || (t.tagName === "INPUT" && t.type !== "button"));
    if (typing) {
      if (e.key === "Escape") { t.blur(); e.preventDefault(); }
      return;
    }
    if (e.key === "?") { toggleHelp(overlay && overlay.hidden); e.preventDefault(); return; }
    if (e.key === "Escape") { toggleHelp(false); return; }
    if (e.key === "j" || e.key === "ArrowRight") { go(root.dataset.next); e.preventDefault(); return; }
    if (e.key === "k" || e.key === "ArrowLeft") { go(root.dataset.prev); e.preventDefault(); return; }
    if (e.key === "n") {
      const note = root.querySelector("textarea[data-key]");
      if (note) { note.focus(); e.preventDefault(); }
      return;
    }
    const button = root.querySelector('button.choice[data-shortcut="' + e.key + '"]');
    if (button) { choose(button); e.preventDefault(); }
  });
})();
