// taskrecon console: progressive enhancement only. Every page and action works without this file.
/* global document, window, HTMLFormElement */
'use strict';

// Ask before a state change: forms (or the button that submits them) that carry data-confirm.
document.addEventListener('submit', (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement)) return;
  const question = event.submitter?.dataset.confirm ?? form.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});

// Relative ages next to absolute times ("3 min ago"), refreshed each minute.
function ages() {
  const now = Date.now();
  for (const el of document.querySelectorAll('time[datetime]')) {
    const ms = now - Date.parse(el.getAttribute('datetime'));
    if (!Number.isFinite(ms)) continue;
    const abs = Math.abs(ms) / 1000;
    const text =
      abs < 90
        ? `${Math.round(abs)} s`
        : abs < 5400
          ? `${Math.round(abs / 60)} min`
          : abs < 172800
            ? `${Math.round(abs / 3600)} h`
            : `${Math.round(abs / 86400)} d`;
    el.title = ms >= 0 ? `${text} ago` : `in ${text}`;
  }
}
ages();
setInterval(ages, 60000);
