(function () {
  const form = document.getElementById("decision-form");
  const go = (id) => { const a = document.getElementById(id); if (a) window.location = a.href; };
  const choose = (value) => { const r = form && form.querySelector('input[name=action][value="' + value + '"]'); if (r) r.checked = true; return r; };
  document.addEventListener("keydown", (ev) => {
    const typing = /INPUT|TEXTAREA|SELECT/.test(ev.target.tagName);
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && form) { ev.preventDefault(); form.requestSubmit(); return; }
    if (ev.key === "Escape" && typing) { ev.target.blur(); return; }
    if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    // Single-key shortcuts off (the user's keyboard preference, WCAG 2.1.4): Ctrl+Enter and Escape only.
    if (document.body.dataset.singleKeyShortcuts === "off") return;
    if (ev.key === "k" && form && choose("keep")) { ev.preventDefault(); form.requestSubmit(); }
    else if (ev.key === "d" && form && choose("drop")) { ev.preventDefault(); document.getElementById("note").focus(); }
    else if (ev.key === "r" && form && choose("relabel")) { ev.preventDefault(); document.getElementById("new_gold").focus(); }
    else if (ev.key === "j") go("next");
    else if (ev.key === "p") go("prev");
    else if (ev.key === "i") go("reveal");
    else if (ev.key === "q") go("to-queue");
  });
})();
