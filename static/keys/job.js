// A key job's page: the stage and elapsed time from the JSON endpoint every second; once the job has
// ended the page reloads, and the server answers with the key (done) or the refusal (failed).
(function () {
  const box = document.getElementById("job");
  if (!box) return;
  function paint(data) {
    document.getElementById("job-status").textContent = data.status;
    document.getElementById("job-stage").textContent = data.stage;
    document.getElementById("job-elapsed").textContent = data.elapsed;
    const note = document.getElementById("job-note");
    note.textContent = data.note;
    note.hidden = !data.note;
    return data.ended;
  }
  async function poll() {
    try {
      const response = await fetch(box.dataset.url, {headers: {"Accept": "application/json"}});
      if (response.ok && paint(await response.json())) {
        window.location.reload();
        return;
      }
    } catch (e) { /* keep polling */ }
    setTimeout(poll, 1000);
  }
  setTimeout(poll, 1000);
})();
