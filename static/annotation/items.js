// The annotator's item list: j/p (or the arrows) move the current row, Enter opens it, u goes to the first
// unanswered row. The current row is focused and aria-current. Nothing happens by a single key when the
// user turned single-key shortcuts off (base.html marks the page).
(function () {
  "use strict";
  const rows = Array.from(document.querySelectorAll("#item-list tbody tr"));
  if (!rows.length) return;
  const marked = rows.findIndex(function (r) { return r.getAttribute("aria-current") === "true"; });
  let at = marked >= 0 ? marked : 0;
  function show(focus) {
    rows.forEach(function (r, i) {
      r.classList.toggle("current", i === at);
      r.tabIndex = i === at ? 0 : -1;
      if (i === at) r.setAttribute("aria-current", "true"); else r.removeAttribute("aria-current");
    });
    if (focus) { rows[at].focus(); rows[at].scrollIntoView({ block: "nearest" }); }
  }
  show(marked >= 0);
  rows.forEach(function (r, i) { r.addEventListener("focus", function () { at = i; show(false); }); });
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey || /INPUT|TEXTAREA|SELECT/.test(e.target.tagName)) return;
    const single = document.body.dataset.singleKeyShortcuts !== "off";
    const onRow = rows.indexOf(e.target) >= 0;
    if (e.key === "Enter" && onRow) { window.location.href = rows[at].dataset.href; e.preventDefault(); return; }
    if ((e.key === "ArrowDown" || e.key === "ArrowUp") && onRow) {
      at = e.key === "ArrowDown" ? Math.min(rows.length - 1, at + 1) : Math.max(0, at - 1);
      show(true); e.preventDefault(); return;
    }
    if (!single) return;
    if (e.key === "j") { at = Math.min(rows.length - 1, at + 1); }
    else if (e.key === "p") { at = Math.max(0, at - 1); }
    else if (e.key === "u") { const u = rows.findIndex(function (r) { return r.classList.contains("open"); }); if (u >= 0) at = u; }
    else return;
    e.preventDefault();
    show(true);
  });
})();
