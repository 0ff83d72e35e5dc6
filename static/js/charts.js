// Draws the page's Plotly charts from the figure JSON the server wrote with json_script, and
// wires the PNG buttons. Charts are containers with data-figure="<id of the JSON script>".
(function () {
  "use strict";

  function config(container) {
    return {
      responsive: true,
      displaylogo: false,
      topojsonURL: "",
      toImageButtonOptions: {format: "png", filename: container.dataset.filename || container.id, scale: 2},
    };
  }

  function draw(container) {
    const source = document.getElementById(container.dataset.figure);
    if (!source || typeof Plotly === "undefined") {
      container.textContent = "This chart could not be drawn: its data or plotly.js is missing.";
      return Promise.resolve();
    }
    const figure = JSON.parse(source.textContent);
    return Plotly.newPlot(container, figure.data, figure.layout, config(container)).then(function () {
      container.dataset.drawn = "true";
    });
  }

  function drawAll(root) {
    const containers = (root || document).querySelectorAll("[data-figure]");
    return Promise.all(Array.prototype.map.call(containers, draw)).then(function () {
      document.body.dataset.chartsDrawn = "true";
    });
  }

  function downloadPng(event) {
    const button = event.target.closest("[data-png-for]");
    if (!button) return;
    const chart = document.getElementById(button.dataset.pngFor);
    if (chart && chart.dataset.drawn) {
      Plotly.downloadImage(chart, {format: "png", filename: chart.dataset.filename || chart.id,
                                   width: chart.offsetWidth, height: chart.offsetHeight});
    }
  }

  window.plannerCharts = {draw: draw, drawAll: drawAll};
  document.addEventListener("click", downloadPng);
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { drawAll(); });
  } else {
    drawAll();
  }
})();
