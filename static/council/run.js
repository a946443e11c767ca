(function () {
  const table = document.getElementById("progress");
  function paint(data) {
    document.getElementById("run-status").textContent = data.status;
    const stalled = document.getElementById("stalled-reason");
    stalled.textContent = data.stalled_reason || "";
    stalled.hidden = !data.stalled_reason;
    for (const m of data.members) {
      const row = table.querySelector(`tr[data-member="${CSS.escape(m.member)}"]`);
      if (!row) continue;
      row.querySelector(".done").textContent = m.done;
      row.querySelector(".errors").textContent = m.errors;
      row.querySelector(".remaining").textContent = m.remaining;
      const state = row.querySelector(".state");
      state.className = `state state-${m.state}`;
      state.querySelector(".state-name").textContent = m.state;
      let detail = state.querySelector(".state-detail");
      const text = m.detail ? m.detail + (m.retry_in !== null ? ` (next try in ${m.retry_in} s)` : "") : "";
      if (text && !detail) {
        state.appendChild(document.createElement("br"));
        detail = document.createElement("small");
        detail.className = "state-detail";
        state.appendChild(detail);
      }
      if (detail) detail.textContent = text;
      const pct = m.total ? 100 * (m.done + m.errors) / m.total : 0;
      row.querySelector(".bar").style.width = pct.toFixed(1) + "%";
    }
    // Once the run has ended there is nothing to cancel.
    const cancel = document.getElementById("cancel-form");
    if (cancel && !data.can_cancel) cancel.remove();
    return data.finished || data.cancelled || data.status === "stalled";
  }
  async function poll() {
    try {
      const response = await fetch(table.dataset.url, {headers: {"Accept": "application/json"}});
      if (response.ok && paint(await response.json())) return;
    } catch (e) { /* keep polling */ }
    setTimeout(poll, 1000);
  }
  poll();
})();
