// tavernbot web page, live pages and copy buttons (loaded after app.js; pages work without it).
// A page whose <main> holds an element with data-session (and data-live-floors) listens to
// /sessions/{id}/live; on "changed" it fetches itself again and swaps <main>, so new floors and
// pages appear without a reload. A button with data-copy="#selector" copies that element's text.
(function () {
  "use strict";

  function swapMain(html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var fresh = doc.querySelector("main");
    var main = document.querySelector("main");
    if (!fresh || !main) { return; }
    var open = {};
    main.querySelectorAll("details[data-page]").forEach(function (d) { open[d.dataset.page] = d.open; });
    var y = window.scrollY;
    main.innerHTML = fresh.innerHTML;
    main.querySelectorAll("details[data-page]").forEach(function (d) {
      if (d.dataset.page in open) { d.open = open[d.dataset.page]; }
    });
    window.scrollTo(0, y);
    document.documentElement.setAttribute("data-live-refreshed", String(Date.now()));
    wireCopy();
  }

  function refresh() {
    fetch(window.location.href, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html) { swapMain(html); } })
      .catch(function () { /* the next change tries again */ });
  }

  function listen() {
    var marker = document.querySelector("main [data-live-floors][data-session]");
    if (!marker || !window.EventSource) { return; }
    var source = new EventSource("/sessions/" + encodeURIComponent(marker.dataset.session) + "/live");
    source.addEventListener("hello", function () {
      document.documentElement.setAttribute("data-live", "on");
    });
    source.addEventListener("changed", refresh);
  }

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) { return navigator.clipboard.writeText(text); }
    // Plain HTTP on another host has no clipboard API: copy through a selected text area.
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      document.body.appendChild(area);
      area.select();
      var ok = document.execCommand && document.execCommand("copy");
      document.body.removeChild(area);
      if (ok) { resolve(); } else { reject(new Error("copy refused")); }
    });
  }

  function wireCopy() {
    document.querySelectorAll("[data-copy]").forEach(function (button) {
      if (button.dataset.wired) { return; }
      button.dataset.wired = "1";
      button.hidden = false;
      button.addEventListener("click", function () {
        var target = document.querySelector(button.dataset.copy);
        if (!target) { return; }
        copyText(target.textContent).then(function () {
          button.textContent = "Copied";
        }, function () { button.textContent = "Copy failed"; });
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () { listen(); wireCopy(); });
})();
