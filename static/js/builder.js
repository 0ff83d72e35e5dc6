// Scenario builder: one-click example cluster specs, and a busy state while the scenario is
// created and its runs launched (a large trace takes tens of seconds to check).
(function () {
  "use strict";
  var form = document.getElementById("builder");
  if (!form) return;

  var examples = JSON.parse(document.getElementById("example-specs").textContent);
  var spec = form.querySelector("textarea[name='cluster_spec']");
  var cluster = form.querySelector("select[name='cluster']");
  form.querySelectorAll("button[data-example]").forEach(function (button) {
    button.addEventListener("click", function () {
      spec.value = examples[button.dataset.example];
      if (cluster) cluster.value = "";  // the spec only counts without an existing cluster
      spec.focus();
    });
  });

  // Each ticked policy runs once per combination of the stages ticked for it, one box set
  // per layer (none ticked in a layer: its own stage).
  function runCount() {
    var policies = 0;
    form.querySelectorAll("input[name='policies']:checked").forEach(function (box) {
      var combinations = 1;
      ["capacity", "allocation", "placement"].forEach(function (layer) {
        var ticked = form.querySelectorAll(
          "input[name='stage__" + box.value + "__" + layer + "']:checked").length;
        combinations *= Math.max(ticked, 1);
      });
      policies += combinations;
    });
    var seeds = form.querySelector("input[name='seeds']").value.split(/[,;]/)
      .filter(function (part) { return part.trim() !== ""; }).length;
    return policies * Math.max(seeds, 1);
  }

  form.addEventListener("submit", function (event) {
    var submitter = event.submitter;
    // A disabled button is not submitted: carry its name and value in a hidden input.
    if (submitter && submitter.name) {
      var carried = document.createElement("input");
      carried.type = "hidden";
      carried.name = submitter.name;
      carried.value = submitter.value;
      form.appendChild(carried);
    }
    var runs = runCount();
    var main = document.getElementById("create-run");
    var label = main.dataset.busyLabel.replace("{runs}", runs).replace("{s}", runs === 1 ? "" : "s");
    form.querySelectorAll("button[type='submit']").forEach(function (button) {
      button.disabled = true;
    });
    main.textContent = label;
    form.setAttribute("aria-busy", "true");
    document.getElementById("busy-note").textContent =
      "Checking every input and saving; this can take a while for a large trace.";
  });

  // Back from the run list (page cache): the form is usable again.
  window.addEventListener("pageshow", function (event) {
    if (!event.persisted) return;
    form.removeAttribute("aria-busy");
    form.querySelectorAll("button[type='submit']").forEach(function (button) {
      button.disabled = false;
    });
    document.getElementById("create-run").textContent = "Create and run";
    document.getElementById("busy-note").textContent = "";
  });
})();
