(function () {
  "use strict";
  // Only attributes and classes change here: nothing from the run is parsed as HTML.
  var body = document.body;
  var errors = [];
  function fail(msg) {
    errors.push(String(msg));
    body.setAttribute("data-errors", errors.join(" | "));
  }
  window.addEventListener("error", function (e) { fail(e.message); });
  document.addEventListener("securitypolicyviolation", function (e) {
    fail("blocked by the content security policy: " + e.violatedDirective);
  });

  function select(id) {
    var panel = document.getElementById("node-" + id);
    if (!panel) { return false; }
    var panels = document.querySelectorAll(".node-detail");
    for (var i = 0; i < panels.length; i++) { panels[i].hidden = panels[i] !== panel; }
    var marks = document.querySelectorAll("[data-node]");
    for (var j = 0; j < marks.length; j++) {
      marks[j].classList.toggle("selected", marks[j].getAttribute("data-node") === id);
    }
    body.setAttribute("data-selected", id);
    return true;
  }

  function fromHash() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    if (!id || !select(id)) { select(body.getAttribute("data-best") || "root"); }
  }

  // Clicks on a tree node or a table row (keyboard too) select it through the URL fragment,
  // so the browser's back button and links to "#n0003" work.
  function onActivate(e) {
    var el = e.target.closest ? e.target.closest("[data-node]") : null;
    if (!el || (e.type === "keydown" && e.key !== "Enter" && e.key !== " ")) { return; }
    if (e.target.closest("a")) { return; }
    e.preventDefault();
    window.location.hash = el.getAttribute("data-node");
  }
  document.addEventListener("click", onActivate);
  document.addEventListener("keydown", onActivate);
  window.addEventListener("hashchange", fromHash);

  var filter = document.getElementById("event-filter");
  if (filter) {
    filter.addEventListener("change", function () {
      var kind = filter.value;
      var rows = document.querySelectorAll("tr[data-kind]");
      for (var k = 0; k < rows.length; k++) {
        rows[k].hidden = kind !== "" && rows[k].getAttribute("data-kind") !== kind;
      }
    });
  }

  fromHash();
  body.setAttribute("data-ready", String(document.querySelectorAll("svg .node").length));
})();
