// Draws every figure of the page: each <script type="application/json" class="figure-data">
// holds a Plotly figure ({data, layout}) for the element named by its data-target.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  const holders = document.querySelectorAll("script.figure-data");
  const drawn = [];
  holders.forEach(function (holder) {
    const figure = JSON.parse(holder.textContent);
    const target = document.getElementById(holder.dataset.target);
    drawn.push(Plotly.newPlot(target, figure.data, figure.layout,
      { responsive: true, displaylogo: false }));
  });
  Promise.all(drawn).then(function () {
    document.body.dataset.figuresDrawn = String(drawn.length);
  });
});
