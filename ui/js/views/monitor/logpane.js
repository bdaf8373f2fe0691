// A log that streams in line by line (a launch's ranks). Its lines live in module state (a redrawn
// screen shows them again) and a pane draws them by APPENDING what it has not drawn yet — one text
// node per line, the oldest removed past the cap — so a busy log costs its new lines per frame,
// not a rebuild of thousands of lines.
import { clear } from '../../dom.js';

/** The newest `cap` lines of a log, and how many ever arrived. */
export class LogLines {
  /** @param {number} cap */
  constructor(cap) {
    this.cap = cap;
    /** May hold up to a quarter more than `cap` (trimmed in batches); read through `tail()`. @type {string[]} */
    this.lines = [];
    /** Lines pushed since the start (a pane compares it with what it drew). */
    this.total = 0;
  }

  /** @param {string} line */
  push(line) {
    this.lines.push(line);
    this.total++;
    if (this.lines.length > this.cap + (this.cap >> 2)) this.lines.splice(0, this.lines.length - this.cap);
  }

  /** The newest `cap` lines, oldest first. */
  tail() {
    return this.lines.length > this.cap ? this.lines.slice(-this.cap) : this.lines;
  }

  text() {
    return this.tail().join('\n');
  }
}

/**
 * Keep `pre` showing `log`: each call appends the lines that arrived since the last one and drops
 * the oldest past the cap. Scrolled to the newest line unless the user scrolled up to read.
 * @param {HTMLElement} pre @param {LogLines} log
 * @returns {() => void}
 */
export function logPane(pre, log) {
  let drawn = 0;
  let shown = 0;
  return () => {
    const fresh = log.total - drawn;
    if (fresh <= 0) return;
    drawn = log.total;
    const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    const add = Math.min(fresh, log.cap, log.lines.length);
    if (add >= log.cap) {
      clear(pre);
      shown = 0;
    }
    const lines = document.createDocumentFragment();
    for (const line of log.lines.slice(log.lines.length - add)) lines.append(document.createTextNode(`${line}\n`));
    pre.append(lines);
    shown += add;
    for (; shown > log.cap && pre.firstChild; shown--) pre.removeChild(pre.firstChild);
    if (atEnd) pre.scrollTop = pre.scrollHeight;
  };
}
