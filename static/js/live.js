// Keeps pages current without a reload:
//  - [data-refresh-url]: the element's content is re-fetched as an HTML fragment every
//    data-refresh-seconds (default 5) while the tab is visible and focus is not inside it;
//  - [data-progress-url]: a run's progress bar polls its JSON (status, progress 0..1) every
//    data-poll-seconds (default 1) until the run has finished or failed.
(function () {
  "use strict";

  const FINISHED = ["succeeded", "failed", "cancelled", "finished", "done", "error"];

  function every(seconds, fallback) {
    const value = parseFloat(seconds);
    return (value > 0 ? value : fallback) * 1000;
  }

  function refresh(region) {
    const busy = region.contains(document.activeElement) && document.activeElement !== document.body;
    if (document.hidden || busy) return Promise.resolve();
    return fetch(region.dataset.refreshUrl, {headers: {"X-Requested-With": "fetch"}})
      .then(function (response) {
        if (!response.ok) throw new Error(response.status + " " + response.statusText);
        return response.text();
      })
      .then(function (html) {
        region.innerHTML = html;
        region.removeAttribute("data-refresh-error");
        if (window.plannerCharts) window.plannerCharts.drawAll(region);
        stamp(region, "Updated " + new Date().toLocaleTimeString());
      })
      .catch(function (error) {
        region.dataset.refreshError = "true";
        stamp(region, "Could not refresh (" + error.message + "); retrying.");
      });
  }

  function stamp(region, text) {
    const status = document.getElementById(region.dataset.refreshStatus || "");
    if (status) status.textContent = text;
  }

  function showProgress(bar, body) {
    const percent = Math.round(Math.max(0, Math.min(1, Number(body.progress) || 0)) * 100);
    bar.value = percent;
    bar.setAttribute("aria-valuenow", String(percent));
    const label = document.getElementById(bar.dataset.label || "");
    if (label) label.textContent = percent + " %" + (body.status ? " · " + body.status : "");
    const done = FINISHED.indexOf(String(body.status)) >= 0;
    if (done) {
      bar.dataset.status = body.status;
      const link = document.getElementById(bar.dataset.doneLink || "");
      if (link && body.status === "succeeded") link.hidden = false;
      const message = document.getElementById(bar.dataset.errorBox || "");
      if (message && body.error) { message.textContent = body.error; message.hidden = false; }
    }
    return done;
  }

  function poll(bar) {
    fetch(bar.dataset.progressUrl, {headers: {Accept: "application/json"}})
      .then(function (response) {
        if (!response.ok) throw new Error(response.status + " " + response.statusText);
        return response.json();
      })
      .then(function (body) {
        if (!showProgress(bar, body)) setTimeout(poll, every(bar.dataset.pollSeconds, 1), bar);
      })
      .catch(function () { setTimeout(poll, every(bar.dataset.pollSeconds, 1) * 5, bar); });
  }

  function start() {
    document.querySelectorAll("[data-refresh-url]").forEach(function (region) {
      setInterval(refresh, every(region.dataset.refreshSeconds, 5), region);
    });
    document.querySelectorAll("[data-progress-url]").forEach(function (bar) {
      if (FINISHED.indexOf(bar.dataset.status) < 0) poll(bar);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
