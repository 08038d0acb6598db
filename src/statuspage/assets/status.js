// aro-gitops status page: live updates. The page works without this script (server-rendered);
// with it, each `update` event from /events fetches the same page again and swaps its <header>
// and <main>.
(function () {
  "use strict";
  if (!window.EventSource || !window.fetch || !window.DOMParser) {
    return;
  }
  var busy = false;
  var again = false;

  // Someone typing in the filter keeps what they typed: the update waits until they leave it.
  function typing() {
    var active = document.activeElement;
    var main = document.getElementById("main");
    return active && main && main.contains(active) && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName);
  }

  function refresh() {
    if (busy) {
      again = true;
      return;
    }
    if (typing()) {
      document.activeElement.addEventListener("blur", refresh, { once: true });
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
        // The header too: the reports' commit, and a standby's banner (gone once it leads).
        var nextHeader = doc.querySelector("body > header");
        var currentHeader = document.querySelector("body > header");
        if (nextHeader && currentHeader) {
          currentHeader.replaceWith(document.adoptNode(nextHeader));
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
