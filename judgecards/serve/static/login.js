// Logs in from the personal link /login#token=...: the fragment never reaches the server
// (no access log holds it); it is removed from the address bar and history, then POSTed.
(function () {
  "use strict";
  var match = /(?:^#|&)token=([^&]+)/.exec(window.location.hash);
  if (!match) return;
  history.replaceState(null, "", window.location.pathname);
  if (document.querySelector(".problem")) return; // this token was just refused
  var field = document.getElementById("token");
  field.value = decodeURIComponent(match[1]);
  document.getElementById("login").submit();
})();
