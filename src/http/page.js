// Reloads the page every 10 s, except while the search box is being typed in, and keeps
// the <details> a reader opened open across reloads.
(function () {
  var every = 10000, key = "namesrv-open";
  var open = JSON.parse(sessionStorage.getItem(key) || "[]");
  document.querySelectorAll("details[id]").forEach(function (d) {
    if (open.indexOf(d.id) >= 0) d.open = true;
    d.addEventListener("toggle", function () {
      var ids = [];
      document.querySelectorAll("details[id]").forEach(function (e) { if (e.open) ids.push(e.id); });
      sessionStorage.setItem(key, JSON.stringify(ids));
    });
  });
  function tick() {
    var a = document.activeElement;
    if (a && a.tagName === "INPUT" && a.value !== a.defaultValue) { setTimeout(tick, every); return; }
    location.reload();
  }
  setTimeout(tick, every);
})();
