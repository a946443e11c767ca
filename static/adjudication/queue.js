(function () {
  const rows = Array.from(document.querySelectorAll("#queue tbody tr"));
  if (!rows.length) return;
  let at = Math.max(0, rows.findIndex(r => r.classList.contains("undecided")));
  // The current row is focusable, focused when moved to, and aria-current for assistive technology.
  const show = (focus) => rows.forEach((r, i) => {
    r.classList.toggle("current", i === at);
    r.tabIndex = i === at ? 0 : -1;
    if (i === at) { r.setAttribute("aria-current", "true"); if (focus) r.focus(); } else r.removeAttribute("aria-current");
  });
  show(false);
  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || /INPUT|TEXTAREA|SELECT/.test(ev.target.tagName)) return;
    // Single-key shortcuts off (the user's keyboard preference, WCAG 2.1.4): only Enter on a row acts.
    if (document.body.dataset.singleKeyShortcuts === "off" && ev.key !== "Enter") return;
    if (ev.key === "j" || ev.key === "ArrowDown") { at = Math.min(rows.length - 1, at + 1); }
    else if (ev.key === "p" || ev.key === "ArrowUp") { at = Math.max(0, at - 1); }
    else if (ev.key === "u") { const u = rows.findIndex(r => r.classList.contains("undecided")); if (u >= 0) at = u; }
    else if (ev.key === "Enter") { window.location = rows[at].dataset.href; return; }
    else return;
    ev.preventDefault(); show(true); rows[at].scrollIntoView({block: "nearest"});
  });
})();
