(function () {
  // Save and next in one round trip: the decision is posted by fetch() and the server answers with the
  // next item's page itself (and its URL in X-Goldkey-Url), which replaces this page's body and is put in
  // the address bar as a new history entry. A reload then asks for that page by GET (a decision is never
  // posted again), back and forward load the item they name, and without this script the form posts
  // as usual and is redirected. Listeners sit on the document, which outlives the swapped body.
  //
  // While the adjudicator reads an item, the page a decision on it leads to is fetched ahead (the form's
  // data-ahead) and held with its key. The decision names that key (X-Goldkey-Held); when the held page is
  // still the one the server would answer with, the answer is 204 with X-Goldkey-Held "current" and the
  // held page is shown at once. Otherwise the answer is the page itself, as without a held one.
  const form = () => document.getElementById("decision-form");
  const here = () => window.location.pathname + window.location.search;
  let shown = here();  // the item whose page the document shows
  let saving = false;
  let held = null;  // { key, doc }: the next item's page, fetched ahead for the page shown

  const show = (doc) => {
    document.title = doc.title;
    document.body.replaceWith(doc.body);  // its <script> elements are inert: this script keeps running
    window.scrollTo(0, 0);
  };
  const parse = (html) => new DOMParser().parseFromString(html, "text/html");

  // The message the server would have put on the next page (it sends it in a header instead).
  const say = (text) => {
    const list = document.createElement("ul");
    list.className = "messages";
    const line = document.createElement("li");
    line.className = "success";
    line.textContent = text;
    list.append(line);
    document.querySelector("main").prepend(list);
  };

  const fetchAhead = () => {
    held = null;
    const f = form();
    if (!f || !f.dataset.ahead || !window.fetch || !window.DOMParser) return;
    const from = shown;
    fetch(f.dataset.ahead, { credentials: "same-origin" }).then((response) => {
      if (response.status !== 200) return;  // 204: no other item is undecided
      return response.text().then((html) => {
        if (shown !== from || saving) return;  // the adjudicator has moved on, or is saving without it
        const doc = parse(html);
        const next = doc.getElementById("decision-form");
        if (next && next.dataset.key) {
          held = { key: next.dataset.key, doc };
          f.dataset.held = "";  // the page a decision here leads to is in hand
        }
      });
    }).catch(() => {});  // nothing held: the decision's answer brings the page
  };

  document.addEventListener("submit", (ev) => {
    const f = ev.target;
    if (f.id !== "decision-form" || !window.fetch || !window.DOMParser) return;
    ev.preventDefault();
    if (saving) return;  // a second key press while the first decision is on its way
    saving = true;
    const holding = held;
    held = null;
    const headers = { "X-Goldkey-Next": "page" };
    if (holding) headers["X-Goldkey-Held"] = holding.key;
    fetch(window.location.href, {
      method: "POST", body: new FormData(f), credentials: "same-origin", headers,
    }).then((response) => {
      const next = response.headers.get("X-Goldkey-Url");
      if (response.status === 204 && next && holding && response.headers.get("X-Goldkey-Held") === "current") {
        history.pushState({ decided: true }, "", next);
        shown = here();
        show(holding.doc);
        say(decodeURIComponent(response.headers.get("X-Goldkey-Message") || ""));
        return;
      }
      if (response.status === 204 && next) { window.location.assign(next); return; }  // the queue is done
      return response.text().then((html) => {
        if (next) { history.pushState({ decided: true }, "", next); shown = here(); }
        show(parse(html));  // the next item, or this one with what was refused
      });
    }).then(() => { saving = false; fetchAhead(); }, () => {
      saving = false;
      // No answer: post the form the plain way (the same decision again changes nothing).
      HTMLFormElement.prototype.submit.call(f);
    });
  });
  fetchAhead();

  // An entry this script pushed shares the document of the page it was pushed from: going back or forward
  // to another item's entry loads the item it names (a fragment link's popstate stays on the page).
  window.addEventListener("popstate", () => { if (here() !== shown) window.location.reload(); });

  const go = (id) => { const a = document.getElementById(id); if (a) window.location = a.href; };
  const choose = (value) => { const f = form(); const r = f && f.querySelector('input[name=action][value="' + value + '"]'); if (r) r.checked = true; return r; };
  document.addEventListener("keydown", (ev) => {
    const f = form();
    const typing = /INPUT|TEXTAREA|SELECT/.test(ev.target.tagName);
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && f) { ev.preventDefault(); f.requestSubmit(); return; }
    if (ev.key === "Escape" && typing) { ev.target.blur(); return; }
    if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    // Single-key shortcuts off (the user's keyboard preference, WCAG 2.1.4): Ctrl+Enter and Escape only.
    if (document.body.dataset.singleKeyShortcuts === "off") return;
    if (ev.key === "k" && f && choose("keep")) { ev.preventDefault(); f.requestSubmit(); }
    else if (ev.key === "d" && f && choose("drop")) { ev.preventDefault(); document.getElementById("note").focus(); }
    else if (ev.key === "r" && f && choose("relabel")) { ev.preventDefault(); document.getElementById("new_gold").focus(); }
    else if (ev.key === "j") go("next");
    else if (ev.key === "p") go("prev");
    else if (ev.key === "i") go("reveal");
    else if (ev.key === "q") go("to-queue");
  });
})();
