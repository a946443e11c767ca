(function () {
  const rows = Array.from(document.querySelectorAll("#queue tbody tr"));
  if (!rows.length) return;
  let at = Math.max(0, rows.findIndex(r => r.classList.contains("undecided")));
  const show = () => rows.forEach((r, i) => r.classList.toggle("current", i === at));
  show();
  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || /INPUT|TEXTAREA|SELECT/.test(ev.target.tagName)) return;
    if (ev.key === "j" || ev.key === "ArrowDown") { at = Math.min(rows.length - 1, at + 1); }
    else if (ev.key === "p" || ev.key === "ArrowUp") { at = Math.max(0, at - 1); }
    else if (ev.key === "u") { const u = rows.findIndex(r => r.classList.contains("undecided")); if (u >= 0) at = u; }
    else if (ev.key === "Enter") { window.location = rows[at].dataset.href; return; }
    else return;
    ev.preventDefault(); show(); rows[at].scrollIntoView({block: "nearest"});
  });
})();
