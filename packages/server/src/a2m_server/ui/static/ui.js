// The memory page's script: saves an edit or a weight change in place (the row is
// re-rendered by the server), and loads a row's history when its panel opens. Without it
// every form still works as a plain POST and the history link opens a page.
"use strict";
(function () {
  function rowOf(node) { return node.closest("tr[data-id]"); }

  function say(row, text) {
    var status = row && row.querySelector(".status");
    if (status) { status.textContent = text; }
  }

  function replaceRow(row, html) {
    var template = document.createElement("template");
    template.innerHTML = html.trim();
    var fresh = template.content.firstElementChild;
    if (!fresh) { return null; }
    row.replaceWith(fresh);
    return fresh;
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.classList || !form.classList.contains("inline")) { return; }
    var row = rowOf(form);
    if (!row) { return; }
    event.preventDefault();
    var data = new URLSearchParams(new FormData(form));
    if (event.submitter && event.submitter.name) {
      data.set(event.submitter.name, event.submitter.value);
    }
    data.set("index", row.getAttribute("data-index") || "0");
    var isEdit = form.getAttribute("action") === "/ui/record/edit";
    say(row, "Saving…");
    fetch(form.getAttribute("action"), {
      method: "POST",
      body: data,
      headers: { "X-A2M-UI": "fetch" },
      credentials: "same-origin"
    }).then(function (response) {
      return response.text().then(function (text) {
        if (!response.ok) {
          var doc = new DOMParser().parseFromString(text, "text/html");
          var alert = doc.querySelector("[role=alert]");
          say(row, "Not saved: " + (alert ? alert.textContent : response.status));
          return;
        }
        var fresh = replaceRow(row, text);
        if (!fresh) { return; }
        say(fresh, "Saved.");
        var focus = isEdit ? fresh.querySelector("details.edit summary")
          : fresh.querySelector("form.weight button[value=" + (event.submitter ? event.submitter.value : "up") + "]");
        if (focus) { focus.focus(); }
      });
    }).catch(function () { say(row, "Not saved: the server could not be reached."); });
  });

  document.addEventListener("toggle", function (event) {
    var details = event.target;
    if (!details.classList || !details.classList.contains("history") || !details.open) { return; }
    if (details.getAttribute("data-loaded")) { return; }
    var panel = details.querySelector(".panel");
    fetch(details.getAttribute("data-src"), { credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : Promise.reject(); })
      .then(function (html) {
        var template = document.createElement("template");
        template.innerHTML = html;
        panel.replaceChildren(template.content);
        details.setAttribute("data-loaded", "1");
      })
      .catch(function () { /* the link to the history page stays */ });
  }, true);

  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") { return; }
    var open = event.target.closest && event.target.closest("details[open]");
    if (open) { open.open = false; var s = open.querySelector("summary"); if (s) { s.focus(); } }
  });
})();
