// Shared by every page: forms marked data-csrf-form carry the page's CSRF token, and
// window.judgecards.post() sends JSON with it (the server refuses a cookie request without it).
(function () {
  "use strict";
  var meta = document.querySelector('meta[name="csrf-token"]');
  var token = meta ? meta.getAttribute("content") : "";
  document.querySelectorAll("form[data-csrf-form]").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      fetch(form.action, {
        method: "POST",
        headers: { "X-CSRF-Token": token },
        credentials: "same-origin",
        redirect: "follow",
      }).then(function (response) {
        window.location.assign(response.url || "/");
      });
    });
  });
  window.judgecards = {
    csrfToken: token,
    post: function (url, body) {
      return fetch(url, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": token },
        credentials: "same-origin",
        body: JSON.stringify(body),
      });
    },
  };
})();
