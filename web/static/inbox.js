// inbox.js keeps the approval inbox current: it follows the server's event
// stream (GET /approvals/stream) and swaps in the table each "inbox" event
// carries, rendered and escaped by the server. The browser's EventSource
// resumes the stream with Last-Event-ID when the server ends it.
(function () {
  "use strict";
  var live = document.getElementById("inbox-live");
  if (!live || !window.EventSource) {
    return;
  }
  var url = live.getAttribute("data-stream");
  if (!url) {
    return;
  }
  var source = new EventSource(url);
  source.addEventListener("inbox", function (e) {
    var tpl = document.createElement("template");
    tpl.innerHTML = e.data;
    var fresh = tpl.content.getElementById("inbox");
    var current = document.getElementById("inbox");
    if (fresh && current) {
      current.replaceWith(fresh);
      live.setAttribute("data-updated", e.lastEventId);
    }
  });
  window.addEventListener("pagehide", function () {
    source.close();
  });
})();
