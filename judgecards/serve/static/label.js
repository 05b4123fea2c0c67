// Keyboard-first blind labelling (/label/{audit}) and the admin's "start a queue" form (/label).
// Item text is put on the page with textContent only: nothing from an item is parsed as HTML,
// so a model output holding <script>, onerror= or </textarea> stays text. The judge's answer is
// fetched only after this labeler's own label of the item is stored (the server refuses before).
// Once it was shown, that label stays: `u` then offers a correction, stored as a marked
// revision that agreement and kappa do not use unless asked (the server refuses the undo).
(function () {
  "use strict";

  var REASONS = [
    ["judge_wrong", "the judge is wrong"],
    ["i_slipped", "I slipped"],
    ["rubric_unclear", "the rubric is unclear"],
  ];

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function asText(value) {
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  }

  function call(method, url, body) {
    var request =
      method === "GET"
        ? fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        : window.judgecards.post(url, body || {});
    return request.then(function (response) {
      if (response.status === 204) return { ok: true, status: 204, data: null };
      return response.json().then(
        function (data) { return { ok: response.ok, status: response.status, data: data }; },
        function () { return { ok: false, status: response.status, data: null }; }
      );
    });
  }

  function problem(result) {
    var error = result.data && result.data.error;
    return error ? error.message : "the server answered " + result.status;
  }

  // ------------------------------------------------------------------ admin: start a queue

  var creator = document.getElementById("new-audit");
  if (creator) {
    creator.addEventListener("submit", function (event) {
      event.preventDefault();
      var form = creator.elements;
      var names = form.labelers.value.split(",").map(function (s) { return s.trim(); })
        .filter(function (s) { return s.length > 0; });
      var body = {
        card: form.card.value.trim(),
        model: form.model.value.trim(),
        n: parseInt(form.n.value, 10),
        labels_wanted: parseInt(form.labels_wanted.value, 10),
        reserve_seconds: parseInt(form.reserve_minutes.value, 10) * 60,
        labelers: names.length ? names : null,
        reveal: form.reveal.checked,
      };
      call("POST", "/v1/audits", body).then(function (result) {
        // Back to the list, which now shows the new queue (the admin may not be one of its
        // labelers, and then its page would not exist for them).
        if (result.ok) window.location.assign("/label");
        else document.getElementById("new-audit-message").textContent = problem(result);
      });
    });
  }

  // ------------------------------------------------------------------ labelling page

  var root = document.getElementById("labeling");
  if (!root) return;
  var auditId = parseInt(root.getAttribute("data-audit-id"), 10);
  var base = "/v1/audits/" + auditId;
  var itemBox = document.getElementById("item");
  var formBox = document.getElementById("form");
  var noteRow = document.getElementById("note-row");
  var note = document.getElementById("note");
  var revealBox = document.getElementById("reveal");
  var doneBox = document.getElementById("done");
  var keysBox = document.getElementById("keys");
  var message = document.getElementById("message");
  var progressText = document.getElementById("progress");
  var progressBar = document.getElementById("progress-bar");

  // `previous`: the item last labelled here (and shown the judge's answer), for a revision.
  var state = { mode: "busy", item: null, values: {}, focus: 0, answer: null, previous: null };

  function say(text) { message.textContent = text || ""; }

  // The page's state is on the root too (data-state), for people's styles and for tests.
  function setMode(mode) {
    state.mode = mode;
    root.setAttribute("data-state", mode);
  }

  function setProgress(p) {
    progressText.textContent = p.done + " / " + p.total + " labelled" +
      (p.skipped ? " · " + p.skipped + " skipped" : "");
    progressBar.max = Math.max(p.total, 1);
    progressBar.value = p.done;
  }

  function options(field) {
    if (field.choices.length) return field.choices.slice();
    var values = [];
    if (field.minimum === null || field.maximum === null) return values;
    for (var v = field.minimum; v <= field.maximum; v++) values.push(v);
    return values;
  }

  // The key that picks option `index` of `field`: choices 1, 2, 3...; scores their own digit
  // (0 stands for 10 on a 1-10 scale).
  function keyOf(field, index) {
    var value = options(field)[index];
    if (field.choices.length) return index < 9 ? String(index + 1) : null;
    if (value >= 0 && value <= 9) return String(value);
    if (value === 10 && field.minimum >= 1) return "0";
    return null;
  }

  // The card's words for a point of a score scale ("5 = no factual error"), if it gives any.
  function anchorOf(field, value) {
    var anchors = field.anchors || [];
    for (var i = 0; i < anchors.length; i++) {
      if (anchors[i].value === value) return anchors[i].words;
    }
    return null;
  }

  function label(field) {
    if (field.kind === "winner") return "Which answer is better?";
    return field.name.replace(/_/g, " ");
  }

  function shown(field, value) {
    if (field.kind !== "winner") return String(value);
    return { A: "A (shown first)", B: "B (shown second)", tie: "tie" }[value] || String(value);
  }

  function inputTitle(name) {
    if (name === "answer_a") return "Answer A (shown first)";
    if (name === "answer_b") return "Answer B (shown second)";
    return name.replace(/_/g, " ");
  }

  function renderItem(item) {
    itemBox.replaceChildren();
    var pair = "answer_a" in item.inputs && "answer_b" in item.inputs;
    var sides = pair ? el("div", "sides") : null;
    Object.keys(item.inputs).forEach(function (name) {
      var block = el("section", "input");
      block.appendChild(el("h2", null, inputTitle(name)));
      block.appendChild(el("div", "text", asText(item.inputs[name])));
      if (sides && (name === "answer_a" || name === "answer_b")) {
        if (!sides.parentNode) itemBox.appendChild(sides);
        sides.appendChild(block);
      } else {
        itemBox.appendChild(block);
      }
    });
    renderForm();
  }

  function renderForm() {
    var item = state.item;
    formBox.replaceChildren();
    item.fields.forEach(function (field, index) {
      var row = el("div", "field" + (index === state.focus ? " focused" : ""));
      row.setAttribute("data-field", field.name);
      var title = el("div", "field-name", label(field));
      if (field.hint) title.appendChild(el("span", "hint", " — " + field.hint));
      row.appendChild(title);
      var choices = el("div", "choices");
      options(field).forEach(function (value, i) {
        var key = keyOf(field, i);
        var button = el("button", "choice", (key ? key + " · " : "") + shown(field, value));
        var anchor = anchorOf(field, value);
        if (anchor) button.appendChild(el("span", "anchor", anchor));
        button.type = "button";
        button.tabIndex = -1;
        var chosen = state.values[field.name] === value;
        if (chosen) button.className += " chosen";
        button.setAttribute("aria-pressed", chosen ? "true" : "false");
        button.addEventListener("click", function () {
          state.focus = index;
          choose(field, value);
        });
        choices.appendChild(button);
      });
      row.appendChild(choices);
      formBox.appendChild(row);
    });
    var submit = el(
      "button", "submit", state.mode === "revise" ? "Enter · store the correction" : "Enter · submit"
    );
    submit.type = "button";
    submit.tabIndex = -1;
    submit.addEventListener("click", send);
    formBox.appendChild(submit);
  }

  function choose(field, value) {
    state.values[field.name] = value;
    var fields = state.item.fields;
    if (state.focus < fields.length - 1) state.focus += 1;
    say("");
    renderForm();
  }

  function load(keepMessage) {
    setMode("busy");
    if (!keepMessage) say("");
    call("POST", base + "/next").then(function (result) {
      revealBox.classList.add("hidden");
      if (!result.ok) { say(problem(result)); setMode("label"); return; }
      setProgress(result.data.progress);
      if (!result.data.item) {
        state.item = null;
        setMode("done");
        itemBox.replaceChildren();
        formBox.replaceChildren();
        noteRow.classList.add("hidden");
        doneBox.classList.remove("hidden");
        return;
      }
      doneBox.classList.add("hidden");
      noteRow.classList.remove("hidden");
      state.item = result.data.item;
      state.values = {};
      state.focus = 0;
      note.value = "";
      renderItem(state.item);
      setMode("label");
      window.scrollTo(0, 0);
    });
  }

  function send() {
    var item = state.item;
    for (var i = 0; i < item.fields.length; i++) {
      if (!(item.fields[i].name in state.values)) {
        state.focus = i;
        renderForm();
        say("Set " + label(item.fields[i]) + " first.");
        return;
      }
    }
    if (state.mode === "revise") { sendRevision(item); return; }
    setMode("busy");
    var body = { audit_id: auditId, position: item.position, values: state.values };
    if (note.value.trim()) body.note = note.value.trim();
    call("POST", "/v1/labels", body).then(function (result) {
      if (!result.ok) { say(problem(result)); setMode("label"); return; }
      setProgress(result.data.progress);
      state.previous = item;
      if (item.reveal) reveal(item); else load();
    });
  }

  // Only now, with the blind label stored, is the judge's answer asked for.
  function reveal(item) {
    call("GET", base + "/items/" + item.position + "/judge").then(function (result) {
      if (!result.ok) { load(); return; }
      var answer = result.data;
      state.answer = answer;
      revealBox.replaceChildren();
      revealBox.appendChild(el("h2", null, "The judge's answer"));
      var table = el("table");
      var head = el("tr");
      ["", "judge", "you"].forEach(function (t) { head.appendChild(el("th", null, t)); });
      table.appendChild(head);
      item.fields.forEach(function (field) {
        if (!(field.name in answer.judge)) return;
        var row = el("tr", answer.differs.indexOf(field.name) >= 0 ? "differs" : null);
        row.appendChild(el("th", null, field.name.replace(/_/g, " ")));
        row.appendChild(el("td", null, shown(field, answer.judge[field.name])));
        row.appendChild(el("td", null, shown(field, answer.yours[field.name])));
        table.appendChild(row);
      });
      revealBox.appendChild(table);
      if (answer.differs.length) {
        var ask = el("p", null, "Why do you differ? ");
        REASONS.forEach(function (reason, i) {
          ask.appendChild(el("kbd", null, String(i + 1)));
          ask.appendChild(document.createTextNode(" " + reason[1] + "  "));
        });
        ask.appendChild(el("kbd", null, "Enter"));
        ask.appendChild(document.createTextNode(" go on without a reason"));
        revealBox.appendChild(ask);
      } else {
        revealBox.appendChild(el("p", null, "You agree with the judge. Enter: next item."));
      }
      revealBox.classList.remove("hidden");
      setMode("reveal");
      // Below a long item the panel opens under the fold: bring it into view.
      revealBox.scrollIntoView({ block: "start" });
    });
  }

  // After the reveal the first label stays; a correction goes in as a marked revision.
  function revise(item) {
    state.item = item;
    state.values = {};
    state.focus = 0;
    note.value = "";
    doneBox.classList.add("hidden");
    noteRow.classList.remove("hidden");
    setMode("revise");
    renderItem(item);
    say("The judge's answer on item " + item.position + " was shown, so your first label " +
      "stays as the measurement. Label it again to store a correction, kept apart and marked " +
      "as after the reveal (Enter), or Esc to leave it as it is.");
    window.scrollTo(0, 0);
  }

  function sendRevision(item) {
    setMode("busy");
    var body = { values: state.values };
    if (note.value.trim()) body.note = note.value.trim();
    call("POST", base + "/items/" + item.position + "/revision", body).then(function (result) {
      if (!result.ok) { say(problem(result)); setMode("revise"); return; }
      state.previous = null;
      say("Correction of item " + item.position + " stored apart; your first label stays.");
      load(true);
    });
  }

  function explain(reason) {
    setMode("busy");
    call("POST", base + "/items/" + state.answer.position + "/reveal", { reason: reason })
      .then(function (result) {
        if (!result.ok) say(problem(result));
        load(!result.ok);
      });
  }

  function undo() {
    setMode("busy");
    call("POST", base + "/undo").then(function (result) {
      if (!result.ok && result.status === 409 && state.previous) {
        revise(state.previous);
        return;
      }
      if (!result.ok) { say(problem(result)); setMode(state.item ? "label" : "done"); return; }
      say("Your label of item " + result.data.position + " was undone.");
      load(true);
    });
  }

  function skip() {
    setMode("busy");
    call("POST", base + "/skip", { position: state.item.position }).then(function (result) {
      if (!result.ok) { say(problem(result)); setMode("label"); return; }
      load();
    });
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var key = event.key;
    if (event.target === note) {
      if (key === "Escape") note.blur();
      return;
    }
    if (key === "?") { keysBox.classList.toggle("hidden"); event.preventDefault(); return; }
    if (state.mode === "busy") { event.preventDefault(); return; }
    if (state.mode === "reveal") {
      var index = "123".indexOf(key);
      if (key.length === 1 && index >= 0 && state.answer.differs.length) {
        event.preventDefault();
        explain(REASONS[index][0]);
      } else if (key === "Enter") {
        event.preventDefault();
        load();
      }
      return;
    }
    if (state.mode === "revise" && key === "Escape") { event.preventDefault(); load(); return; }
    if (key === "u" && state.mode !== "revise") { event.preventDefault(); undo(); return; }
    if (state.mode !== "label" && state.mode !== "revise") return;
    var fields = state.item.fields;
    var field = fields[state.focus];
    if (/^[0-9]$/.test(key)) {
      event.preventDefault();
      var values = options(field);
      for (var i = 0; i < values.length; i++) {
        if (keyOf(field, i) === key) { choose(field, values[i]); return; }
      }
      say("No choice " + key + " for " + label(field) + ".");
    } else if (key === "ArrowDown" || key === "ArrowRight") {
      event.preventDefault();
      state.focus = Math.min(state.focus + 1, fields.length - 1);
      renderForm();
    } else if (key === "ArrowUp" || key === "ArrowLeft") {
      event.preventDefault();
      state.focus = Math.max(state.focus - 1, 0);
      renderForm();
    } else if (key === "Enter") {
      event.preventDefault();
      send();
    } else if (key === "s" && state.mode === "label") {
      event.preventDefault();
      skip();
    } else if (key === "n") {
      event.preventDefault();
      note.focus();
    }
  });

  load();
})();
