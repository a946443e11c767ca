(function () {
  const rows = Array.from(document.querySelectorAll("#queue tbody tr"));
  if (!rows.length) return;
  const table = document.getElementById("queue");
  const nextPage = document.getElementById("next-page");
  const prevPage = document.getElementById("prev-page");
  // Where the cursor starts: the item we came back from, the last row when paging backwards, else
  // the first undecided row of the page.
  let at = rows.findIndex(r => table.dataset.at && r.dataset.item === table.dataset.at);
  if (at < 0 && window.location.hash === "#last") at = rows.length - 1;
  if (at < 0) at = Math.max(0, rows.findIndex(r => r.classList.contains("undecided")));
  // The current row is focusable, focused when moved to, and aria-current for assistive technology.
  const show = (focus) => rows.forEach((r, i) => {
    r.classList.toggle("current", i === at);
    r.tabIndex = i === at ? 0 : -1;
    if (i === at) { r.setAttribute("aria-current", "true"); if (focus) r.focus(); } else r.removeAttribute("aria-current");
  });
  show(false);
  if (table.dataset.at || window.location.hash === "#last") rows[at].scrollIntoView({block: "nearest"});
  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || /INPUT|TEXTAREA|SELECT/.test(ev.target.tagName)) return;
    // Single-key shortcuts off (the user's keyboard preference, WCAG 2.1.4): only Enter on a row acts.
    if (document.body.dataset.singleKeyShortcuts === "off" && ev.key !== "Enter") return;
    if (ev.key === "j" || ev.key === "ArrowDown") {
      // Past the last row the flow goes on to the next page of the queue.
      if (at === rows.length - 1 && nextPage) { ev.preventDefault(); window.location = nextPage.href; return; }
      at = Math.min(rows.length - 1, at + 1);
    } else if (ev.key === "p" || ev.key === "ArrowUp") {
      if (at === 0 && prevPage) { ev.preventDefault(); window.location = prevPage.href + "#last"; return; }
      at = Math.max(0, at - 1);
    }
    else if (ev.key === "u") { const u = rows.findIndex(r => r.classList.contains("undecided")); if (u >= 0) at = u; }
    else if (ev.key === "Enter") { window.location = rows[at].dataset.href; return; }
    else return;
    ev.preventDefault(); show(true); rows[at].scrollIntoView({block: "nearest"});
  });
})();
