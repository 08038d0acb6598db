// aro-gitops status page: live updates. The page works without this script (server-rendered);
// with it, each `update` event from /events fetches the same page again and swaps its <main>.
(function () {
  "use strict";
  if (!window.EventSource || !window.fetch || !window.DOMParser) {
    return;
  }
  var busy = false;
  var again = false;

  function refresh() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    fetch(window.location.href, { cache: "no-store", headers: { Accept: "text/html" } })
      .then(function (response) {
        return response.ok ? response.text() : null;
      })
      .then(function (text) {
        if (text === null) {
          return;
        }
        var doc = new DOMParser().parseFromString(text, "text/html");
        var next = doc.getElementById("main");
        var current = document.getElementById("main");
        if (next && current) {
          current.replaceWith(document.adoptNode(next));
        }
        document.title = doc.title;
        var generation = doc.body.getAttribute("data-generation");
        if (generation !== null) {
          document.body.setAttribute("data-generation", generation);
        }
      })
      .catch(function () {})
      .then(function () {
        busy = false;
        if (again) {
          again = false;
          refresh();
        }
      });
  }

  var events = new EventSource("/events");
  events.addEventListener("update", function (event) {
    if (event.data !== document.body.getAttribute("data-generation")) {
      refresh();
    }
  });
  document.documentElement.classList.add("live");
})();
