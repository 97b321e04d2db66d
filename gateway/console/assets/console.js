// The console's live part: rows replaced in place from the server-sent
// events of /ui/stream, a countdown to each server's next attempt, and
// the live event list (pausable). Without it the pages still work.
(function () {
  'use strict';
  function tick() {
    var now = Date.now();
    document.querySelectorAll('[data-next]').forEach(function (el) {
      var s = Math.ceil((Number(el.dataset.next) - now) / 1000);
      el.textContent = s > 0 ? 'next attempt in ' + s + 's' : 'next attempt now';
    });
  }
  tick();
  setInterval(tick, 1000); // counts down locally: asks the server nothing
  if (!document.body.dataset.stream || !window.EventSource) return;
  var live = document.getElementById('live');
  var paused = false;
  var pause = document.getElementById('pause');
  if (pause) pause.addEventListener('click', function () {
    paused = !paused;
    pause.setAttribute('aria-pressed', String(paused));
    pause.textContent = paused ? 'Resume' : 'Pause';
  });
  var es = new EventSource('/ui/stream');
  es.onopen = function () { if (live) live.textContent = 'live'; };
  es.onerror = function () { if (live) live.textContent = 'reconnecting…'; };
  es.addEventListener('row', function (m) {
    var d = JSON.parse(m.data);
    var old = document.getElementById(d.id);
    var table = document.querySelector('#servers tbody');
    if (!d.html) { if (old) old.remove(); return; }
    var t = document.createElement('tbody');
    t.innerHTML = d.html;
    var tr = t.firstElementChild;
    if (old) old.replaceWith(tr);
    else if (table && table.parentElement.dataset.all) {
      var empty = table.querySelector('.empty');
      if (empty) empty.remove();
      table.appendChild(tr);
    }
    tick();
  });
  es.addEventListener('event', function (m) {
    var list = document.getElementById('events');
    if (!list || paused) return;
    var d = JSON.parse(m.data);
    if ((list.dataset.server && list.dataset.server !== d.server) || (list.dataset.kind && list.dataset.kind !== d.kind)) return;
    var t = document.createElement('ol');
    t.innerHTML = d.html;
    var empty = list.querySelector('.empty');
    if (empty) empty.remove();
    list.insertBefore(t.firstElementChild, list.firstChild);
    while (list.children.length > 200) list.lastElementChild.remove();
  });
})();
