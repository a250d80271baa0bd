// The Live page: each alert of the server-sent event stream (/live/events) added at the top.
// An alert's text is set as text (textContent), never as markup.
(function () {
  "use strict";
  var rows = document.getElementById("alert-rows");
  var state = document.getElementById("stream-state");
  var sound = document.getElementById("sound");
  var audio = null;

  function beep() {
    // a short two-tone cue made by the Web Audio API: no sound file, nothing fetched
    if (!sound || !sound.checked) { return; }
    if (!audio) { audio = new (window.AudioContext || window.webkitAudioContext)(); }
    [880, 660].forEach(function (hz, i) {
      var osc = audio.createOscillator(), gain = audio.createGain();
      osc.frequency.value = hz;
      gain.gain.value = 0.15;
      osc.connect(gain);
      gain.connect(audio.destination);
      var t = audio.currentTime + i * 0.18;
      osc.start(t);
      osc.stop(t + 0.15);
    });
  }

  function cell(row, text, cls) {
    var td = document.createElement("td");
    if (cls) { td.className = cls; }
    if (text !== null) { td.textContent = text; }
    row.appendChild(td);
    return td;
  }

  function tag(parent, text, cls) {
    var span = document.createElement("span");
    span.className = cls;
    span.textContent = text;
    parent.appendChild(document.createTextNode(" "));
    parent.appendChild(span);
  }

  function add(a) {
    if (rows.querySelector('tr[data-key="' + CSS.escape(a.key) + '"]')) { return; }
    var none = document.getElementById("no-alerts");
    if (none) { none.remove(); }
    var row = document.createElement("tr");
    row.className = "alert new sev-" + a.severity + (a.provisional ? " provisional" : "");
    row.dataset.key = a.key;
    row.dataset.finding = a.finding_id;
    cell(row, a.time, "time");
    var sev = cell(row, null, "sev");
    var badge = document.createElement("span");
    badge.className = "badge";
    badge.textContent = a.severity;
    sev.appendChild(badge);
    if (a.provisional) { tag(sev, "provisional", "tag"); }
    if (a.clears) { tag(sev, "cleared", "tag"); }
    cell(row, a.table, "table");
    cell(row, a.place, "place");
    cell(row, a.dealer, "dealer");
    var what = cell(row, null, "what");
    if (a.link) {
      var link = document.createElement("a");
      link.href = a.link;
      link.textContent = a.title;
      what.appendChild(link);
    } else {
      what.appendChild(document.createTextNode(a.title));
    }
    var detail = document.createElement("div");
    detail.className = "detail";
    detail.textContent = "expected " + a.expected + "; actual " + a.actual;
    what.appendChild(detail);
    cell(row, a.video, "video");
    rows.insertBefore(row, rows.firstChild);
    if (a.clears) {
      rows.querySelectorAll('tr.provisional[data-finding="' + CSS.escape(a.clears) + '"]').forEach(function (r) {
        r.classList.add("cleared");
      });
    }
    if (a.severity === "critical") { row.classList.add("flash"); beep(); }
    setTimeout(function () { row.classList.remove("new"); }, 5000);
  }

  var source = new EventSource("/live/events");
  source.addEventListener("open", function () { state.textContent = "following"; state.className = "state on"; });
  source.addEventListener("error", function () { state.textContent = "reconnecting…"; state.className = "state off"; });
  source.addEventListener("alert", function (e) { add(JSON.parse(e.data)); });
}());
