// tavernbot web page: small enhancements only; every page reads fine without this file.
(function () {
  "use strict";
  var THEME_KEY = "tavernbot-theme";
  var root = document.documentElement;
  var saved = null;
  try { saved = window.localStorage.getItem(THEME_KEY); } catch (e) { /* storage off */ }
  if (saved === "light" || saved === "dark") { root.setAttribute("data-theme", saved); }

  function systemDark() {
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  }

  document.addEventListener("DOMContentLoaded", function () {
    var toggle = document.querySelector("[data-theme-toggle]");
    if (!toggle) { return; }
    toggle.hidden = false;
    toggle.addEventListener("click", function () {
      var now = root.getAttribute("data-theme");
      var dark = now === "dark" || (now !== "light" && systemDark());
      var next = dark ? "light" : "dark";
      root.setAttribute("data-theme", next);
      try { window.localStorage.setItem(THEME_KEY, next); } catch (e) { /* storage off */ }
    });
  });
})();
