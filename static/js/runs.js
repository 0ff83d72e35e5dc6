// The runs page between reloads. live.js polls each unfinished run's progress bar; this file
// watches those bars and keeps the rest of the row current:
//  - while a run is running: its duration so far and its ETA, the time left at the rate so
//    far (elapsed x (1 - progress) / progress; "—" until there is progress);
//  - when it ends: its finished time, duration, readable error (the full text behind
//    <details>) and Re-run in place of Cancel, from one last read of the run's JSON.
// Times use the server's clock (the table's data-server-now), not the browser's.
(function () {
  "use strict";

  const FINISHED = ["succeeded", "failed", "cancelled"];
  const table = document.getElementById("runs");
  if (!table) return;
  const skewMs = Number(table.dataset.serverNow) * 1000 - Date.now();

  function serverNow() { return (Date.now() + skewMs) / 1000; }

  // The same rule as planner.dashboard.selectors.error_headline.
  function headline(text) {
    const lines = String(text).trim().split("\n").map(function (l) { return l.trim(); })
      .filter(Boolean);
    if (!lines.length) return "no error message recorded";
    const traceback = lines[0].indexOf("Traceback (most recent call last)") === 0;
    const line = (traceback ? lines[lines.length - 1] : lines[0])
      .replace(/^(?:[\w.]+\.)?InputError: /, "");
    return line.length <= 300 ? line : line.slice(0, 299) + "…";
  }

  function duration(seconds) {
    const [unit, scale] = seconds >= 7200 ? ["h", 3600] : seconds >= 120 ? ["min", 60] : ["s", 1];
    return (seconds / scale).toLocaleString("en-US", {minimumFractionDigits: 1,
                                                      maximumFractionDigits: 1}) + " " + unit;
  }

  function timeCell(cell, iso) {
    if (!cell || !iso) return;
    const moment = new Date(iso);
    const node = document.createElement("time");
    node.dateTime = iso;
    node.title = iso;
    // It happened while the page was open: today, so the time alone (as the server writes it).
    node.textContent = moment.toLocaleTimeString("en-GB", {hour12: false,
                                                          timeZone: table.dataset.timeZone || "UTC"});
    cell.replaceChildren(node);
  }

  function showDuration(row, seconds, soFar) {
    const cell = row.querySelector("[data-cell=duration]");
    cell.textContent = duration(seconds) + (soFar ? " so far" : "");
    cell.title = seconds.toFixed(3) + " s";
  }

  function readRun(row) {
    return fetch(row.dataset.runUrl, {headers: {Accept: "application/json"}})
      .then(function (response) {
        if (!response.ok) throw new Error(response.status + " " + response.statusText);
        return response.json();
      });
  }

  function running(row, bar) {
    const eta = document.getElementById("eta-" + row.id.slice(4));
    eta.hidden = false;
    if (!row.dataset.started) {
      if (!row.dataset.reading) {
        row.dataset.reading = "true";
        readRun(row).then(function (body) {
          if (body.started_at) {
            row.dataset.started = String(Date.parse(body.started_at) / 1000);
            timeCell(row.querySelector("[data-cell=started]"), body.started_at);
          }
        }).finally(function () { delete row.dataset.reading; });
      }
      return;
    }
    const elapsed = Math.max(0, serverNow() - Number(row.dataset.started));
    const progress = Number(bar.getAttribute("aria-valuenow")) / 100;
    showDuration(row, elapsed, true);
    if (progress > 0) {
      const left = elapsed * (1 - progress) / progress;
      eta.textContent = "ETA: " + duration(left) + " left";
      eta.title = left.toFixed(0) + " s";
    } else {
      eta.textContent = "ETA: —";
    }
  }

  function finished(row) {
    const id = row.id.slice(4);
    document.getElementById("eta-" + id).hidden = true;
    readRun(row).then(function (body) {
      timeCell(row.querySelector("[data-cell=started]"), body.started_at);
      timeCell(row.querySelector("[data-cell=finished]"), body.finished_at);
      if (body.wall_seconds !== null && body.wall_seconds !== undefined) {
        showDuration(row, body.wall_seconds, false);
      }
      const box = document.getElementById("error-" + id);
      if (body.error) {
        const short = headline(body.error);
        box.className = body.status === "cancelled" ? "muted" : "run-error";
        box.querySelector(".error-headline").textContent = short;
        box.querySelector("pre").textContent = body.error;
        box.querySelector("details").hidden = short === body.error;
        box.hidden = false;
      }
      const cancel = document.getElementById("cancel-" + id);
      const rerun = document.getElementById("rerun-" + id);
      if (cancel) cancel.hidden = true;
      if (rerun) rerun.hidden = false;
    });
  }

  function watch(bar) {
    const row = bar.closest("tr");
    const update = function () {
      if (FINISHED.indexOf(bar.dataset.status) >= 0) {
        observer.disconnect();
        finished(row);
      } else if (Number(bar.getAttribute("aria-valuenow")) > 0 || bar.dataset.status === "running") {
        running(row, bar);
      }
    };
    const observer = new MutationObserver(update);
    observer.observe(bar, {attributes: true, attributeFilter: ["aria-valuenow", "data-status"]});
  }

  table.querySelectorAll("progress[data-progress-url]").forEach(function (bar) {
    if (FINISHED.indexOf(bar.dataset.status) < 0) watch(bar);
  });
})();
