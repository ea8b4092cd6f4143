// Sort tables with class "sortable" by clicking a header: numbers by the
// cell's data-v, text otherwise; empty cells last. A table with a
// data-filter input before it shows only the rows containing its text.
// Without script the tables keep the report's own order and every row.
// A link from a chart to a configuration row the filter hides clears the filter.
(function () {
  "use strict";
  function key(cell) {
    var v = cell.getAttribute("data-v");
    if (v === null) v = cell.textContent.trim();
    if (v === "" || v === "\u2013") return null;
    var n = Number(v);
    return isNaN(n) ? v.toLowerCase() : n;
  }
  function cmp(a, b) {
    if (a === null) return b === null ? 0 : 1;
    if (b === null) return -1;
    if (typeof a === typeof b) return a < b ? -1 : a > b ? 1 : 0;
    return typeof a === "number" ? -1 : 1;
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      var b = document.createElement("button");
      b.type = "button";
      b.className = "sort";
      b.textContent = th.textContent;
      th.textContent = "";
      th.appendChild(b);
      b.addEventListener("click", function () {
        var asc = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (r, s) {
          var x = key(r.cells[col]), y = key(s.cells[col]);
          if (x === null || y === null) return cmp(x, y);
          return asc ? cmp(x, y) : cmp(y, x);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  function filter(input, table) {
    var q = input.value.trim().toLowerCase();
    Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
      r.hidden = q !== "" && r.textContent.toLowerCase().indexOf(q) < 0;
    });
  }
  var filters = [];
  Array.prototype.forEach.call(document.querySelectorAll("input[data-filter]"), function (input) {
    var table = document.getElementById(input.getAttribute("data-filter"));
    if (!table) return;
    input.hidden = false;
    filters.push([input, table]);
    input.addEventListener("input", function () { filter(input, table); });
  });
  // A link into a folded section opens it (and every fold around the target).
  function unfold(target) {
    for (var el = target; el; el = el.parentElement) {
      if (el.tagName === "DETAILS") el.open = true;
    }
  }
  if (location.hash) {
    var first = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (first) { unfold(first); first.scrollIntoView(); }
  }
  window.addEventListener("hashchange", function () {
    var target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (target) unfold(target);
    if (target && !target.hidden) target.scrollIntoView();
    if (!target || !target.hidden) return;
    filters.forEach(function (f) {
      if (f[1].contains(target)) {
        f[0].value = "";
        filter(f[0], f[1]);
      }
    });
    target.scrollIntoView({ block: "center" });
  });
})();
