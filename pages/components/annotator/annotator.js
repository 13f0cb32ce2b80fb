// The annotation widget (issue 13): a window of the annotator's queue held in the browser,
// the next pair drawn in the same frame as the key press, ratings kept in an ordered list of
// unacknowledged entries (sessionStorage) until the server acknowledges them.
//
// Data from Python (pages/annotate.py): who (opaque storage name), scale, min_view_ms,
// comment_max, total, done, start, complete, window (pairs: position, term_1, term_2, rating,
// unclear, comment, version), reply_to, ack, versions, refused, unavailable, ended.
// State to Python: "outbox" = {pending, at, sent}.
//
// Terms and every other text from the server are inserted with textContent, never as HTML.

const INSTANCES = new WeakMap();
const RESEND_AFTER_MS = 4000;
const BACKOFF_MS = [1000, 2000, 4000, 8000, 15000];
const REMINDER_RUN = 10;
const REFILL_BELOW = 20; // pairs held ahead of the doctor before more are asked for

function $(root, sel) {
  return root.querySelector(sel);
}

function typingTarget(event) {
  const el = (event.composedPath && event.composedPath()[0]) || event.target;
  if (!el || !el.tagName) return false;
  const tag = el.tagName.toLowerCase();
  return tag === "input" || tag === "textarea" || tag === "select" || el.isContentEditable;
}

class Annotator {
  constructor(root) {
    this.root = root;
    this.el = {
      main: $(root, ".medsim-main"),
      pair: $(root, ".medsim-terms"),
      t1: $(root, '[data-testid="medsim-term-1"]'),
      t2: $(root, '[data-testid="medsim-term-2"]'),
      options: $(root, ".medsim-options"),
      back: $(root, ".medsim-back"),
      unclear: $(root, ".medsim-unclear"),
      comment: $(root, ".medsim-comment"),
      count: $(root, ".medsim-comment-count"),
      savedNote: $(root, ".medsim-saved-note"),
      end: $(root, ".medsim-end"),
      endText: $(root, ".medsim-end-text"),
      endBack: $(root, ".medsim-end-back"),
      wait: $(root, ".medsim-wait"),
      notice: $(root, ".medsim-notice"),
      reminder: $(root, ".medsim-reminder"),
      status: $(root, ".medsim-status"),
      announce: $(root, ".medsim-sr"),
      progress: $(root, ".medsim-progress"),
      fill: $(root, ".medsim-progress-fill"),
      progressText: $(root, ".medsim-progress-text"),
    };
    this.cache = new Map(); // position -> pair (with local answers applied)
    this.newly = new Set(); // positions first rated in this tab since baseDone was counted
    this.pending = [];
    this.seq = 0;
    this.acked = 0;
    this.pos = null; // position on screen; null: waiting or end screen
    this.want = null; // position the widget waits for (not yet in the window)
    this.drawnAt = 0;
    this.sent = 0;
    this.attempt = 0;
    this.lastReply = -1;
    this.started = false;
    this.ended = null;
    this.unavailable = false;
    this.complete = false;
    this.ignored = 0;
    this.timer = null;
    this.onKey = (e) => this.handleKey(e);
    document.addEventListener("keydown", this.onKey);
    this.el.back.addEventListener("click", () => this.back());
    this.el.endBack.addEventListener("click", () => this.back());
    this.el.unclear.addEventListener("click", () => this.toggleUnclear());
    this.el.comment.addEventListener("input", () => this.commentChanged());
    this.el.comment.addEventListener("keydown", (e) => {
      if (e.key === "Escape") this.el.comment.blur();
    });
  }

  // ---------------------------------------------------------------- storage
  storageKey() {
    return `medsim-annot:${this.who}`;
  }

  load() {
    try {
      const raw = sessionStorage.getItem(this.storageKey());
      if (raw) {
        const saved = JSON.parse(raw);
        this.pending = Array.isArray(saved.pending) ? saved.pending : [];
        this.seq = Number(saved.seq) || 0;
        this.epoch = typeof saved.epoch === "string" ? saved.epoch : null;
      }
    } catch (err) {
      this.pending = [];
    }
    // Sequence numbers count within an epoch; a tab without storage starts a new epoch, so
    // the server never mistakes a restarted count for ratings it has acknowledged.
    if (!this.epoch) {
      this.epoch = Math.random().toString(36).slice(2) + Date.now().toString(36);
      this.seq = 0;
    }
  }

  persist() {
    try {
      sessionStorage.setItem(
        this.storageKey(),
        JSON.stringify({ epoch: this.epoch, seq: this.seq, pending: this.pending }),
      );
    } catch (err) {
      // Storage full or disabled: the list still lives in memory and in component state.
    }
  }

  // ---------------------------------------------------------------- server data
  receive(data, setStateValue) {
    this.setStateValue = setStateValue;
    if (!data) return;
    if (!this.who) {
      this.who = data.who;
      this.scale = data.scale;
      this.minView = Number(data.min_view_ms) || 0;
      this.el.comment.maxLength = Number(data.comment_max) || 2000;
      this.buildOptions();
      this.load();
      if (this.pending.length) {
        this.acked = 0;
        this.showWait(`Sending ${this.pending.length} rating(s) kept from before…`);
        this.send(-1);
      }
    }
    this.total = Number(data.total) || 0;
    if ("waiting" in data) this.waiting = Number(data.waiting) || 0;
    if (this.baseDone === undefined) this.baseDone = Number(data.done) || 0;
    this.unavailable = !!data.unavailable;
    if (data.ended) {
      this.stop(data.ended);
      return;
    }
    const fresh = data.reply_to !== this.lastReply;
    this.lastReply = data.reply_to;
    if (fresh) this.applyAck(data);
    for (const p of data.window || []) this.merge(p);
    if (!this.started) {
      if (this.pending.length) {
        this.renderStatus();
        if (this.unavailable) this.scheduleRetry();
        return; // resend first, show new pairs after
      }
      this.started = true;
      this.hideWait();
      this.baseDone = Number(data.done) || 0;
      this.newly.clear();
      if (data.complete) this.showEnd();
      else this.go(data.start);
    } else if (fresh && data.resume) {
      this.baseDone = Number(data.done) || 0;
      this.newly.clear();
      if (data.complete) this.showEnd();
      else this.go(data.start);
    } else if (this.pos === null && this.want !== null && this.cache.has(this.want)) {
      this.go(this.want);
    } else if (this.pos !== null) {
      this.refreshAnswer();
    }
    this.renderProgress();
    this.renderStatus();
    if (this.unavailable && this.pending.length) this.scheduleRetry();
  }

  applyAck(data) {
    const versions = data.versions || {};
    for (const [seq, v] of Object.entries(versions)) {
      const s = Number(seq);
      for (const e of this.pending) {
        if (e.after === s) {
          e.version = v;
          e.after = null;
        }
      }
      const done = this.pending.find((e) => e.seq === s);
      if (done && !this.pending.some((e) => e.position === done.position && e.seq > s)) {
        const pair = this.cache.get(done.position);
        if (pair) pair.version = v;
      }
    }
    for (const r of data.refused || []) this.refused(r);
    const ack = Number(data.ack) || 0;
    if (ack > this.acked) this.acked = ack;
    const before = this.pending.length;
    this.pending = this.pending.filter((e) => e.seq > this.acked);
    if (this.pending.length !== before) this.persist();
    if (!this.unavailable) this.attempt = 0;
    if (!this.started && this.pending.length === 0) this.hideWait();
  }

  refused(r) {
    const entry = this.pending.find((e) => e.seq === r.seq);
    this.pending = this.pending.filter((e) => e.seq !== r.seq);
    this.persist();
    const later = this.pending.some((e) => e.position === r.position);
    const pair = this.cache.get(r.position);
    if (r.current && pair && !later) {
      pair.rating = r.current.rating === null ? null : String(r.current.rating);
      pair.unclear = !!r.current.unclear;
      pair.comment = r.current.comment || "";
      pair.version = Number(r.current.version) || 0;
      pair.rated = pair.rating !== null;
    }
    let text;
    if (r.current) {
      const label = r.current.rating === null || r.current.rating === undefined
        ? "no answer"
        : this.label(String(r.current.rating));
      text = `This pair was changed in another window — here is the current answer: ${label}` +
        (r.current.unclear ? " (unclear meaning)" : "") + ". Your key press was not saved.";
    } else {
      text = `Not saved: ${r.message}`;
    }
    if (entry && this.started && !later) this.go(r.position);
    this.notice(text, "refused");
  }

  merge(p) {
    const pos = Number(p.position);
    const local = this.pending.some((e) => e.position === pos);
    const have = this.cache.get(pos);
    if (have && local) return; // the browser's own unacknowledged answer wins
    this.cache.set(pos, {
      position: pos,
      term_1: p.term_1,
      term_2: p.term_2,
      rating: p.rating,
      unclear: !!p.unclear,
      comment: p.comment || "",
      version: Number(p.version) || 0,
      rated: p.rating !== null,
    });
  }

  // ---------------------------------------------------------------- sending
  send(need) {
    // need: the position from which the browser needs pairs (null: its window suffices;
    // -1: where to resume, i.e. the first unrated slot).
    this.sent += 1;
    if (this.setStateValue) {
      this.setStateValue("outbox", {
        epoch: this.epoch,
        pending: this.pending.slice(0, 500),
        need: need,
        sent: this.sent,
        attempt: this.attempt,
      });
    }
    this.armResend();
  }

  armResend() {
    clearTimeout(this.resendTimer);
    if (!this.pending.length || this.ended) return;
    this.resendTimer = setTimeout(() => {
      if (this.pending.length && !this.ended) {
        this.attempt += 1;
        this.send(this.want);
      }
    }, RESEND_AFTER_MS);
  }

  scheduleRetry() {
    clearTimeout(this.timer);
    const wait = BACKOFF_MS[Math.min(this.attempt, BACKOFF_MS.length - 1)];
    this.timer = setTimeout(() => {
      this.attempt += 1;
      this.send(this.want);
    }, wait);
  }

  // ---------------------------------------------------------------- drawing
  buildOptions() {
    const box = this.el.options;
    box.textContent = "";
    this.optionButtons = new Map();
    for (const o of this.scale.options) {
      const b = document.createElement("button");
      b.type = "button";
      b.dataset.testid = "medsim-option";
      b.dataset.value = o.value;
      b.textContent = o.label;
      const k = document.createElement("kbd");
      k.textContent = o.key;
      b.appendChild(k);
      if (o.description) b.title = o.description;
      b.addEventListener("click", () => this.rate(o.value, performance.now()));
      box.appendChild(b);
      this.optionButtons.set(o.value, b);
    }
    this.el.unclear.hidden = !this.scale.unclear_flag;
  }

  label(value) {
    const o = this.scale.options.find((x) => x.value === value);
    return o ? o.label : value;
  }

  go(pos, mustSend) {
    if (pos === null || pos === undefined) {
      this.showEnd();
      return;
    }
    const pair = this.cache.get(pos);
    if (!pair) {
      this.pos = null;
      this.want = pos;
      this.showWait("Loading the next pair…");
      this.send(pos);
      return;
    }
    this.want = null;
    this.pos = pos;
    this.unclearNow = pair.unclear;
    this.el.end.hidden = true;
    this.el.wait.hidden = true;
    this.el.main.hidden = false;
    this.el.t1.textContent = pair.term_1;
    this.el.t2.textContent = pair.term_2;
    this.el.pair.dataset.position = String(pos);
    this.el.comment.value = pair.comment || "";
    this.el.back.disabled = pos === 0;
    this.drawnAt = performance.now();
    this.refreshAnswer();
    this.renderProgress();
    this.el.announce.textContent = `Pair ${pos + 1} of ${this.total}: ${pair.term_1} versus ${pair.term_2}`;
    this.maybeRefill(mustSend);
  }

  refreshAnswer() {
    const pair = this.cache.get(this.pos);
    if (!pair) return;
    for (const [value, b] of this.optionButtons) {
      b.classList.toggle("medsim-current", pair.rated && pair.rating === value);
    }
    this.el.unclear.setAttribute("aria-pressed", this.unclearNow ? "true" : "false");
    this.el.savedNote.textContent = pair.rated
      ? `Saved answer: ${this.label(pair.rating)}${pair.unclear ? " · unclear meaning" : ""}. Press a key to change it.`
      : "";
    this.commentChanged();
  }

  renderProgress() {
    const done = Math.min(this.total, (this.baseDone || 0) + this.newly.size);
    this.done = done;
    const frac = this.total ? done / this.total : 0;
    this.el.fill.style.width = `${(frac * 100).toFixed(2)}%`;
    this.el.progress.setAttribute("aria-valuemax", String(this.total));
    this.el.progress.setAttribute("aria-valuenow", String(done));
    this.el.progressText.textContent =
      this.pos === null
        ? `${done} / ${this.total} rated`
        : `${done} / ${this.total} rated · pair ${this.pos + 1} of ${this.total}`;
  }

  renderStatus() {
    const s = this.el.status;
    const n = this.pending.length;
    if (this.ended) {
      s.dataset.state = "error";
      s.textContent = n ? `${n} not saved` : "Stopped";
    } else if (n === 0) {
      s.dataset.state = "saved";
      s.textContent = "All saved";
    } else if (this.unavailable) {
      s.dataset.state = "error";
      s.textContent = `${n} not saved — will retry`;
    } else {
      s.dataset.state = "saving";
      s.textContent = `${n} saving…`;
    }
    s.dataset.pending = String(n);
    if (this.complete && this.el.end.hidden === false) this.showEnd();
  }

  notice(text, kind) {
    this.el.notice.textContent = text;
    this.el.notice.dataset.kind = kind || "";
  }

  showWait(text) {
    this.el.main.hidden = true;
    this.el.end.hidden = true;
    this.el.wait.hidden = false;
    this.el.wait.textContent = text;
  }

  hideWait() {
    this.el.wait.hidden = true;
  }

  showEnd() {
    this.pos = null;
    this.want = null;
    this.complete = true;
    this.el.main.hidden = true;
    this.el.wait.hidden = true;
    this.el.end.hidden = false;
    this.el.reminder.hidden = true;
    // 2 + 1 studies: pairs others have not rated yet may still bring a tiebreak pair.
    const waiting = this.waiting || 0;
    this.el.end.dataset.waiting = String(waiting);
    this.el.endText.textContent = waiting > 0
      ? `Waiting for other doctors — come back later: ${waiting} pair(s) may still need your rating.` +
        (this.pending.length ? " Your last ratings are still being saved; keep this tab open until the status says “All saved”." : "")
      : this.pending.length
      ? "Your queue is complete — your last ratings are still being saved; keep this tab open until the status says “All saved”."
      : "Your queue is complete — thank you! Every rating is saved. You can close this tab.";
    this.el.announce.textContent = this.el.endText.textContent;
    this.renderProgress();
  }

  stop(message) {
    this.ended = message;
    clearTimeout(this.timer);
    clearTimeout(this.resendTimer);
    this.pos = null;
    this.el.main.hidden = true;
    this.el.end.hidden = true;
    this.el.reminder.hidden = true;
    this.el.wait.hidden = false;
    const kept = this.pending.length
      ? ` ${this.pending.length} rating(s) were not saved; they are kept in this tab and sent after you sign in again.`
      : "";
    this.el.wait.textContent =
      "Your access code was replaced or revoked, so this session has stopped. " +
      "Sign in again with your current code, or ask the study admin." + kept;
    this.el.wait.dataset.testid = "medsim-ended";
    this.renderStatus();
  }

  // ---------------------------------------------------------------- actions
  handleKey(e) {
    if (this.ended || e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
    if (typingTarget(e)) return;
    const at = performance.now();
    if (e.key === "Backspace") {
      e.preventDefault();
      if (!e.repeat) this.back();
      return;
    }
    const key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
    if (this.pos === null) {
      if (this.el.wait.hidden || !this.scale.options.some((o) => o.key.toLowerCase() === key)) return;
      e.preventDefault();
      this.ignore("Key ignored: the next pair is still loading. Press again when it appears.");
      return;
    }
    const opt = this.scale.options.find((o) => o.key.toLowerCase() === key);
    if (opt) {
      e.preventDefault();
      if (!e.repeat) this.rate(opt.value, at);
      return;
    }
    if (key === "u" && this.scale.unclear_flag) {
      e.preventDefault();
      if (!e.repeat) this.toggleUnclear();
    }
  }

  rate(value, at) {
    if (this.pos === null || this.ended) return;
    const shown = at - this.drawnAt;
    if (shown < this.minView) {
      this.ignore(
        `Key ignored: this pair had been on screen for only ${Math.round(shown)} ms. ` +
          "Look at it and press again.",
      );
      return;
    }
    const pos = this.pos;
    const pair = this.cache.get(pos);
    const comment = this.el.comment.value.trim().slice(0, this.el.comment.maxLength);
    const unclear = !!this.unclearNow;
    const same =
      pair.rated && pair.rating === value && pair.unclear === unclear &&
      (pair.comment || "").trim() === comment;
    if (!same) {
      const earlier = [...this.pending].reverse().find((e) => e.position === pos);
      this.seq += 1;
      this.pending.push({
        seq: this.seq,
        position: pos,
        value: value,
        unclear: unclear,
        comment: comment,
        elapsed_ms: Math.max(0, Math.round(shown)),
        version: earlier ? null : pair.version,
        after: earlier ? earlier.seq : null,
      });
      if (!pair.rated) this.newly.add(pos);
      pair.rating = value;
      pair.unclear = unclear;
      pair.comment = comment;
      pair.rated = true;
      this.persist();
    }
    this.notice("", "");
    const next = this.nextPosition(pos);
    if (next === undefined) {
      // Past the end of the window: the server says where the first unrated slot is.
      this.showWait("Checking your queue…");
      this.pos = null;
      this.send(-1);
    } else {
      this.go(next, !same);
    }
    this.renderReminder(pos);
    this.renderStatus();
  }

  ignore(text) {
    this.ignored += 1;
    this.el.status.dataset.ignored = String(this.ignored);
    this.notice(text, "ignored");
  }

  nextPosition(pos) {
    // The first unrated slot after pos; positions not yet in the window are fetched.
    for (let q = pos + 1; q < this.total; q++) {
      const pair = this.cache.get(q);
      if (!pair) return q;
      if (!pair.rated) return q;
    }
    for (let q = 0; q < pos; q++) {
      const pair = this.cache.get(q);
      if (!pair) return undefined;
      if (!pair.rated) return q;
    }
    return undefined;
  }

  maybeRefill(mustSend) {
    // Ask for more pairs when fewer than half a window is held ahead of the doctor. The
    // message goes after the frame with the new pair has been painted: handing state to
    // Streamlit does work on the page's main thread that must not delay that frame.
    let ahead = 0;
    for (let q = this.pos + 1; q < this.total && this.cache.has(q); q++) ahead++;
    const wanted = Math.min(REFILL_BELOW, this.total - this.pos - 1);
    const need = ahead < wanted ? this.pos : null;
    if (need === null && !mustSend) return;
    this.sendAfterPaint(need);
  }

  sendAfterPaint(need) {
    if (this.paintTimer) {
      this.queuedNeed = this.queuedNeed ?? need;
      return;
    }
    this.queuedNeed = need;
    this.paintTimer = requestAnimationFrame(() => {
      setTimeout(() => {
        this.paintTimer = null;
        const n = this.queuedNeed;
        this.queuedNeed = null;
        this.send(n);
      }, 0);
    });
  }

  back() {
    if (this.ended) return;
    if (this.pos === null) {
      if (this.want !== null) return;
      this.complete = false;
      this.go(Math.max(0, this.total - 1));
      return;
    }
    if (this.pos > 0) this.go(this.pos - 1);
    this.el.reminder.hidden = true;
    this.notice("", "");
  }

  toggleUnclear() {
    if (this.pos === null || !this.scale.unclear_flag) return;
    this.unclearNow = !this.unclearNow;
    this.el.unclear.setAttribute("aria-pressed", this.unclearNow ? "true" : "false");
  }

  commentChanged() {
    const n = this.el.comment.value.length;
    const max = this.el.comment.maxLength;
    this.el.count.textContent = n > max * 0.8 ? `${n} / ${max} characters` : "";
  }

  renderReminder(pos) {
    let run = 0;
    let value = null;
    for (let q = pos; q >= 0 && run < REMINDER_RUN; q--) {
      const pair = this.cache.get(q);
      if (!pair || !pair.rated) break;
      if (value === null) value = pair.rating;
      if (pair.rating !== value) break;
      run++;
    }
    this.el.reminder.hidden = run < REMINDER_RUN;
  }

  destroy() {
    document.removeEventListener("keydown", this.onKey);
    if (this.paintTimer) cancelAnimationFrame(this.paintTimer);
    clearTimeout(this.timer);
    clearTimeout(this.resendTimer);
  }
}

export default function (component) {
  const { parentElement, data, setStateValue } = component;
  let inst = INSTANCES.get(parentElement);
  if (!inst || !parentElement.contains(inst.el.t1)) {
    if (inst) inst.destroy();
    inst = new Annotator(parentElement);
    INSTANCES.set(parentElement, inst);
  }
  inst.receive(data, setStateValue);
  return () => {
    inst.destroy();
    INSTANCES.delete(parentElement);
  };
}
